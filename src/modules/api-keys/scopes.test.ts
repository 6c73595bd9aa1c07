import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  allowsAny,
  parseAllowedScopes,
  permissionLackedFor,
  SCOPES,
  type Scope,
  ScopeParseError,
} from './scopes.ts';

const scope = fc.constantFrom(...SCOPES);
/** One separator as a merchant might type it: commas and/or whitespace, in any mix. */
const separator = fc.stringMatching(/^[ ,\t\n]{1,4}$/);
const edge = fc.stringMatching(/^[ ,\t\n]{0,3}$/);

/** Joins tokens with arbitrary separators and optional separators at both ends. */
function joined(tokens: fc.Arbitrary<string[]>) {
  return fc
    .tuple(tokens, fc.array(separator, { minLength: 20, maxLength: 20 }), edge, edge)
    .map(
      ([parts, seps, start, end]) =>
        start + parts.map((part, i) => (i ? seps[i % 20] : '') + part).join('') + end,
    );
}

describe('parseAllowedScopes', () => {
  test('any order, any duplicates and any comma/space separators give the set in canonical order', () => {
    fc.assert(
      fc.property(
        fc.array(scope, { minLength: 1, maxLength: 12 }).chain((chosen) =>
          joined(fc.shuffledSubarray(chosen, { minLength: chosen.length })).map((text) => ({
            chosen,
            text,
          })),
        ),
        ({ chosen, text }) => {
          const expected = SCOPES.filter((s) => chosen.includes(s));
          assert.deepEqual(parseAllowedScopes(text), expected);
        },
      ),
    );
  });

  test('an empty string, or separators only, means every scope (the empty list)', () => {
    fc.assert(fc.property(edge, (text) => parseAllowedScopes(text).length === 0));
    assert.deepEqual(parseAllowedScopes(''), []);
  });

  test('an unknown scope anywhere in the list is refused and named', () => {
    const unknown = fc
      .stringMatching(/^[A-Za-z:_.*-]{1,20}$/)
      .filter((token) => !(SCOPES as readonly string[]).includes(token));
    fc.assert(
      fc.property(fc.array(scope, { maxLength: 5 }), unknown, fc.nat(), (known, bad, at) => {
        const tokens: string[] = [...known];
        tokens.splice(at % (known.length + 1), 0, bad);
        assert.throws(
          () => parseAllowedScopes(tokens.join(', ')),
          (error: unknown) => error instanceof ScopeParseError && error.message.includes(`"${bad}"`),
        );
      }),
    );
  });

  test('scopes are case-sensitive and must be whole words', () => {
    for (const text of [
      'Payments:Read',
      'payments:read:extra',
      'payments',
      'payments;read',
      'payments:read;',
    ]) {
      assert.throws(() => parseAllowedScopes(text), ScopeParseError, `accepted ${text}`);
    }
  });
});

describe('allowsAny', () => {
  test('a key with no scopes may call anything; otherwise it needs one of the required scopes', () => {
    fc.assert(
      fc.property(fc.subarray([...SCOPES]), fc.subarray([...SCOPES]), (granted, required: Scope[]) => {
        const expected =
          granted.length === 0 || required.length === 0 || required.some((s) => granted.includes(s));
        return allowsAny(granted, required) === expected;
      }),
    );
  });
});

describe('permissionLackedFor', () => {
  test('owners and admins may grant every scope; a developer every scope but the refunding ones and "all"', () => {
    for (const role of ['owner', 'admin'] as const) {
      assert.equal(permissionLackedFor(role, []), null, role);
      assert.equal(permissionLackedFor(role, [...SCOPES]), null, role);
    }
    assert.equal(
      permissionLackedFor('developer', ['checkout:create', 'payments:read', 'refunds:read']),
      null,
    );
    for (const scopes of [
      [],
      ['refunds:write'],
      ['payments:write'],
      ['payments:read', 'payments:write'],
    ] as Scope[][]) {
      assert.equal(permissionLackedFor('developer', scopes), 'refunds:write', scopes.join(' ') || 'all');
    }
  });
});
