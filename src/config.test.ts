import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { ConfigError, listenPort, loadConfig, publicUrlOf } from './config.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'kassa-config-'));
after(() => rmSync(dataDir, { recursive: true, force: true }));
const load = (env: Record<string, string>) =>
  loadConfig({ KASSA_DATA_DIR: dataDir, KASSA_SECRET_KEY: 'a'.repeat(64), ...env });

test('PORT and HOST apply when KASSA_PORT and KASSA_HOST are unset, and the public URL follows the port', () => {
  const config = load({ PORT: '8080', HOST: '127.0.0.1' });
  assert.equal(config.port, 8080);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.portVariable, 'PORT');
  assert.equal(config.publicUrl, 'http://localhost:8080');
});

test('KASSA_PORT and KASSA_HOST win over PORT and HOST; KASSA_PUBLIC_URL wins over the port', () => {
  const config = load({ PORT: '8080', HOST: '127.0.0.1', KASSA_PORT: '4000', KASSA_HOST: '::1' });
  assert.deepEqual([config.port, config.host, config.portVariable], [4000, '::1', 'KASSA_PORT']);
  assert.equal(config.publicUrl, 'http://localhost:4000');
  const given = load({ PORT: '8080', KASSA_PUBLIC_URL: 'https://pay.example.com/' });
  assert.equal(given.publicUrl, 'https://pay.example.com');
  assert.equal(given.publicUrlExplicit, true);
});

test('defaults are port 3000 on every address with the public URL on :3000', () => {
  const config = load({});
  assert.deepEqual([config.port, config.host, config.publicUrl], [3000, '0.0.0.0', 'http://localhost:3000']);
  assert.equal(config.publicUrlExplicit, false);
});

test('a bad PORT is refused with a message naming PORT', () => {
  assert.throws(
    () => load({ PORT: 'http' }),
    (error: Error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /^PORT must be a whole number/);
      return true;
    },
  );
  assert.throws(() => load({ PORT: '70000' }), { message: /^PORT must be between 0 and 65535/ });
});

test('the port and public URL defaults are one rule, for the server and for `kassa listen`', () => {
  assert.deepEqual(listenPort({}), { port: 3000, portVariable: 'KASSA_PORT' });
  assert.deepEqual(listenPort({ PORT: '8080' }), { port: 8080, portVariable: 'PORT' });
  assert.deepEqual(listenPort({ PORT: '8080', KASSA_PORT: '4000' }), {
    port: 4000,
    portVariable: 'KASSA_PORT',
  });
  assert.equal(publicUrlOf({}), 'http://localhost:3000');
  assert.equal(publicUrlOf({ PORT: '8080' }), 'http://localhost:8080');
  assert.equal(publicUrlOf({ PORT: '8080', KASSA_PORT: '4000' }), 'http://localhost:4000');
  assert.equal(
    publicUrlOf({ PORT: '8080', KASSA_PUBLIC_URL: 'https://pay.example.com/' }),
    'https://pay.example.com',
  );
  assert.throws(() => publicUrlOf({ KASSA_PORT: 'http' }), ConfigError);
});
