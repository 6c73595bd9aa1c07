// What `npm run test:mutation` mutates, which fast unit tests each file's mutants run, and the
// surviving mutants that are equivalent (no test could tell them from the original), each with why.
// A file whose score falls under THRESHOLD fails the run; so does an equivalence that no longer matches
// a survivor (the code moved on: delete or fix the entry).

export const THRESHOLD = 90;

export interface MutationTarget {
  /** The production file whose mutants are made. */
  file: string;
  /** The unit tests each mutant runs (only these: they must be fast and cover the file). */
  tests: string[];
}

export const TARGETS: MutationTarget[] = [
  { file: 'src/lib/money.ts', tests: ['src/lib/money.test.ts'] },
  { file: 'src/modules/checkout/pricing.ts', tests: ['src/modules/checkout/pricing.test.ts'] },
  { file: 'src/modules/refunds/eligibility.ts', tests: ['src/modules/refunds/eligibility.test.ts'] },
  { file: 'src/modules/wallet/arithmetic.ts', tests: ['src/modules/wallet/arithmetic.test.ts'] },
  { file: 'src/modules/webhooks/schedule.ts', tests: ['src/modules/webhooks/schedule.test.ts'] },
  { file: 'src/modules/webhooks/ssrf.ts', tests: ['src/modules/webhooks/ssrf.test.ts'] },
  { file: 'src/modules/subscriptions/periods.ts', tests: ['src/modules/subscriptions/periods.test.ts'] },
  { file: 'src/modules/subscriptions/dunning.ts', tests: ['src/modules/subscriptions/dunning.test.ts'] },
];

export interface EquivalentMutant {
  file: string;
  /** Stryker's mutator name, e.g. "ConditionalExpression". */
  mutator: string;
  /** The replacement code Stryker reports. */
  replacement: string;
  /** Text of the mutated line (a part of it) that pins the place. */
  line: string;
  reason: string;
}

export const EQUIVALENT: EquivalentMutant[] = [
  {
    file: 'src/lib/money.ts',
    mutator: 'EqualityOperator',
    replacement: 'product <= 0n',
    line: 'const negative = product < 0n;',
    reason: 'a product of 0 rounds to 0 whichever sign it is given: a bigint has no negative zero',
  },
  {
    file: 'src/lib/money.ts',
    mutator: 'StringLiteral',
    replacement: '""',
    line: "BigInt(value.split('.')[0] || '0')",
    reason: "BigInt('') is 0n, the same as BigInt('0')",
  },
  {
    file: 'src/modules/webhooks/schedule.ts',
    mutator: 'ConditionalExpression',
    replacement: 'false',
    line: 'if (retryAfterMs === null) return jittered;',
    reason:
      'without the early return, Math.min(null, cap) is 0 and Math.max(jittered, 0) is the jittered delay: the same answer',
  },
  {
    file: 'src/modules/refunds/eligibility.ts',
    mutator: 'EqualityOperator',
    replacement: 'available < 0n',
    line: 'if (available <= 0n || payment.netUsd <= 0n) return 0n;',
    reason: 'an available amount of exactly 0 gives 0 × gross / net = 0 on the other path too',
  },
  {
    file: 'src/modules/refunds/eligibility.ts',
    mutator: 'EqualityOperator',
    replacement: 'remaining >= 0n',
    line: 'return remaining > 0n ? remaining : 0n;',
    reason: 'a remainder of exactly 0 is returned as 0 either way',
  },
  {
    file: 'src/modules/refunds/eligibility.ts',
    mutator: 'EqualityOperator',
    replacement: 'amountInCents >= htLeft',
    line: 'amountInCents: amountInCents > htLeft && htLeft >= 0n ? htLeft : amountInCents,',
    reason: 'when the amount equals what is left, capping it gives the same amount',
  },
  {
    file: 'src/modules/wallet/arithmetic.ts',
    mutator: 'EqualityOperator',
    replacement: 'a <= b',
    line: 'if (a < b) return a;',
    reason: 'when a equals b, returning a or b is the same amount',
  },
  {
    file: 'src/modules/wallet/arithmetic.ts',
    mutator: 'EqualityOperator',
    replacement: 'free >= 0n',
    line: 'const fromBalance = lesserOf(amount, free > 0n ? free : 0n);',
    reason: 'when the free balance is exactly 0, taking it or 0 is the same amount',
  },
  ...[
    'if (!globalUnicast.check(bare, ',
    'const hit = ipv6Checks.find((check) => check.list.check(bare, ',
  ].map(
    (line): EquivalentMutant => ({
      file: 'src/modules/webhooks/ssrf.ts',
      mutator: 'StringLiteral',
      replacement: '""',
      line,
      reason: "BlockList.check with an empty family reads the family from the address, as 'ipv6' does here",
    }),
  ),
  ...['/%.*/', '/%.$/'].map(
    (replacement): EquivalentMutant => ({
      file: 'src/modules/webhooks/ssrf.ts',
      mutator: 'Regex',
      replacement,
      line: "const bare = unbracket(address).replace(/%.*$/, '');",
      reason: "node's isIP and BlockList read an IPv6 zone id themselves: stripping it changes no verdict",
    }),
  ),
  ...[
    'if (error) return callback(error, []);',
    'if (!first) return callback(',
    'return callback(refusal(',
  ].map(
    (line): EquivalentMutant => ({
      file: 'src/modules/webhooks/ssrf.ts',
      mutator: 'ArrayDeclaration',
      replacement: '["Stryker was here"]',
      line,
      reason: 'with an error the HTTP agent never reads the addresses argument',
    }),
  ),
  {
    file: 'src/modules/webhooks/ssrf.ts',
    mutator: 'StringLiteral',
    replacement: '"Stryker was here!"',
    line: "nonPublicReason(first.address) ?? ''",
    reason: 'unreachable: no answer was allowed, so the first one has a reason and ?? never applies',
  },
];
