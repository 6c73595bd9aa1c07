import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseArgs } from 'node:util';
import { joinDashedValues } from './args.ts';

const options = {
  token: { type: 'string' as const },
  'forward-to': { type: 'string' as const },
  help: { type: 'boolean' as const, short: 'h' },
};

const parse = (argv: string[]) => ({
  ...parseArgs({ args: joinDashedValues(argv, options), options, allowPositionals: true, strict: true })
    .values,
});

test('a string option takes a value that begins with a dash (a token can)', () => {
  assert.throws(() => parseArgs({ args: ['--token', '-abc'], options, strict: true }), /ambiguous/);
  assert.deepEqual(parse(['--token', '-abc', '--forward-to', 'http://x']), {
    token: '-abc',
    'forward-to': 'http://x',
  });
  assert.deepEqual(parse(['--token', '--x-y']), { token: '--x-y' });
  assert.deepEqual(parse(['--token=-abc']), { token: '-abc' });
  assert.deepEqual(parse(['--token', 'plain', '-h']), { token: 'plain', help: true });
});

test('a known option is never taken for a value: a forgotten value is still refused', () => {
  assert.throws(() => parse(['--token', '--forward-to', 'http://x']), /argument missing|ambiguous/);
  assert.throws(() => parse(['--token', '-h']), /argument missing|ambiguous/);
  // A boolean option takes no value: what follows is read as options, as before.
  assert.throws(() => parse(['--help', '-abc']), /Unknown option/);
});
