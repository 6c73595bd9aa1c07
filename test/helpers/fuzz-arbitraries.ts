// Request generators for the fuzz test: plans drawn by fast-check from each operation's schemas (bodies
// near the valid ones, then mutated: wrong types, missing and extra fields, huge and odd strings, odd
// numbers and amounts, nulls, arrays, deep nesting, broken JSON, wrong content types), path parameters
// and query strings, and the caller. A plan names identifiers abstractly (Ref); `materialize` turns it
// into bytes for one organization's fixture, so a seed replays the same requests.
import fc from 'fast-check';
import { encodePart, type JsonSchema, type Operation, type RawRequest } from './fuzz.ts';
import type { OrgFixture, RefKind } from './fuzz-fixture.ts';

/** An identifier of the organization under test ('own') or of the passive other organization. */
export class Ref {
  readonly kind: RefKind | 'email' | 'password';
  readonly owner: 'own' | 'other';
  readonly index: number;
  constructor(kind: RefKind | 'email' | 'password', owner: 'own' | 'other', index: number) {
    this.kind = kind;
    this.owner = owner;
    this.index = index;
  }
}

/** JSON text written as is: numbers JSON.stringify cannot write (1e400), deep nesting, broken JSON. */
export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

export type Value = null | boolean | number | string | Ref | RawJson | Value[] | { [key: string]: Value };

export type Caller =
  | 'matching'
  | 'none'
  | 'session'
  | 'cookie'
  | 'cookieWithoutHeader'
  | 'prodKey'
  | 'prodKeyHeader'
  | 'sandboxKey'
  | 'revokedKey'
  | 'garbage';

export type Body =
  | { kind: 'none' }
  | { kind: 'json'; value: Value; mutations: Mutation[] }
  | { kind: 'raw'; text: string };

export interface Mutation {
  kind: 'wrongType' | 'remove' | 'extra' | 'replace';
  /** Which node of the value (modulo the number of nodes). */
  at: number;
  key: string;
  value: Value;
}

export interface RequestPlan {
  operation: number;
  method: string | null;
  caller: Caller;
  garbage: string;
  params: (Ref | { text: string; raw: boolean })[];
  query: [string, Ref | string, boolean][];
  body: Body;
  contentType: string | null;
  headers: [string, string][];
}

// ---------------------------------------------------------------------------------------------------
// Values

const ownerArb = fc.constantFrom<'own' | 'other'>('own', 'own', 'other');
const ref = (...kinds: (RefKind | 'email' | 'password')[]) =>
  fc
    .tuple(fc.constantFrom(...kinds), ownerArb, fc.nat(50))
    .map(([kind, owner, index]) => new Ref(kind, owner, index));

export const HUGE_LENGTHS = [300, 5_000, 70_000, 300_000];

const odd = fc.constantFrom(
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff\ud800',
  '💳💶',
  'Ω≈ç√∫˜µ≤',
  '\u202eRTL',
  '\u200b',
  'e\u0301',
  '\u2028\u2029',
  '\r\n',
  '\t',
  "'; DROP TABLE payments; --",
  '" OR "1"="1',
  '<script>alert(1)</script>',
  '{{7*7}}#{7*7}',
  '../../etc/passwd',
  '%00',
  '%s%n',
  'null',
  'undefined',
  'NaN',
  'true',
  '[]',
  '{}',
  'ﬀ',
  'İ',
  'ß',
);

const unicodeText = fc.oneof(odd, fc.string({ unit: 'binary', maxLength: 30 }), fc.string({ maxLength: 30 }));

const hugeText = fc
  .tuple(fc.constantFrom(...HUGE_LENGTHS), fc.constantFrom('a', 'é', '💳', '9', ' ', '\u0000'))
  .map(([length, char]) => char.repeat(Math.ceil(length / char.length)));

export const ODD_NUMBERS: Value[] = [
  -1,
  0,
  -0,
  0.5,
  1.005,
  0.1 + 0.2,
  1e-7,
  1e21,
  1e308,
  -1e308,
  2 ** 31,
  -(2 ** 31) - 1,
  2 ** 53 + 2,
  Number.MAX_SAFE_INTEGER,
  new RawJson('1e400'),
  new RawJson('-1e400'),
  new RawJson('1E2'),
  new RawJson('1.0'),
  new RawJson('-0.0'),
  new RawJson('9223372036854775808'),
  new RawJson('123456789012345678901234567890'),
  new RawJson('1e-400'),
];

export const ODD_AMOUNTS: Value[] = [
  '10.005',
  '0.001',
  '1e2',
  '-1.00',
  ' 1.00',
  '1.00 ',
  '1,00',
  '0.00',
  '0',
  '00001.00',
  '99999999999999999.99',
  '999999999999999999999',
  '.5',
  '5.',
  'NaN',
  'Infinity',
  '0x10',
  '١٢٣',
  '1_000',
  '+1.00',
  '１２',
  '',
  '1.5e1',
  12.345,
  -5,
  0,
];

const moneyArb: fc.Arbitrary<Value> = fc.oneof(
  { weight: 3, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((cents) => (cents / 100).toFixed(2)) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 200 }) },
  { weight: 2, arbitrary: fc.constantFrom(...ODD_AMOUNTS) },
  { weight: 1, arbitrary: fc.constantFrom(...ODD_NUMBERS) },
);

const isoDate = fc.oneof(
  fc.constantFrom(
    '2099-01-01T00:00:00Z',
    '2000-01-01T00:00:00Z',
    '2026-13-45T99:99:99Z',
    'tomorrow',
    '1e10',
    '',
    '0000-00-00',
    '+275760-09-13T00:00:00.000Z',
  ),
  fc
    .date({ min: new Date('1900-01-01'), max: new Date('2200-01-01'), noInvalidDate: true })
    .map((d) => d.toISOString()),
);

/** Mostly values the server should accept, sometimes ones of the right type it should refuse. */
function mostly(good: fc.Arbitrary<Value>, bad: fc.Arbitrary<Value>): fc.Arbitrary<Value> {
  return fc.oneof({ weight: 5, arbitrary: good }, { weight: 1, arbitrary: bad });
}

const urlArb = mostly(
  fc.constantFrom(
    'http://127.0.0.1:9/hooks',
    'https://hooks.example.test/kassa?x=1',
    'https://shop.example.test/done',
  ),
  fc.constantFrom(
    'http://localhost/',
    'http://[::1]:9/',
    'http://10.0.0.1/',
    'ftp://files.example.test/',
    'javascript:alert(1)',
    'file:///etc/passwd',
    'http://',
    'http://example.test/#frag',
    'not a url',
    'HTTP://EXAMPLE.TEST/',
    'http://user:pass@example.test/',
    'http://例え.テスト/',
    'gopher://127.0.0.1:25/',
  ),
);

const emailArb = mostly(
  fc.oneof(
    fc.constant(new Ref('email', 'own', 0)),
    fc.constantFrom('ada@example.test', 'ADA@EXAMPLE.TEST'),
    fc.emailAddress(),
  ),
  fc.constantFrom('no-at-sign', 'a@b', '@example.test', '"a b"@example.test', 'a@b@c.test'),
);

const validMoney = fc.integer({ min: 100, max: 20_000 }).map((cents) => (cents / 100).toFixed(2));

const FIELDS: Record<string, fc.Arbitrary<Value>> = {
  email: emailArb,
  billing_email: emailArb,
  contact_email: emailArb,
  password: fc.oneof(fc.constant(new Ref('password', 'own', 0)), fc.string({ maxLength: 30 })),
  amount: mostly(validMoney, moneyArb),
  unit_price: mostly(validMoney, moneyArb),
  product_id: mostly(ref('product'), fc.constantFrom('prod_00000000000000', '', 'x')),
  transaction_id: mostly(ref('payment', 'sandboxPayment'), fc.integer({ min: -1, max: 10_000 })),
  token: mostly(ref('checkoutToken'), fc.base64String({ minLength: 4, maxLength: 60 })),
  checkout_id: mostly(ref('checkout', 'sandboxCheckout'), fc.stringMatching(/^CO[0-9A-Za-z]{20}$/)),
  endpoint_url: urlArb,
  successUrl: urlArb,
  failedUrl: urlArb,
  cancelUrl: urlArb,
  website: urlArb,
  verification_code: mostly(fc.stringMatching(/^\d{6}$/), fc.string({ maxLength: 8 })),
  card_number: mostly(
    fc.constantFrom(
      '4242 4242 4242 4242',
      '4242424242424242',
      '4000 0000 0000 0002',
      '4000000000009995',
      '4000 0000 0000 0069',
      '4000000000000119',
      '5555 5555 5555 4444',
    ),
    fc.constantFrom('4242 4242 4242 4241', '0000 0000 0000 0000', '4242-4242-4242-4242', '١٢٣٤', '42'),
  ),
  exp_month: mostly(fc.integer({ min: 1, max: 12 }), fc.constantFrom(0, 13, -1, '00', 'ab', '12')),
  exp_year: mostly(fc.integer({ min: 2030, max: 2099 }), fc.constantFrom(0, 1999, 30, '2099', '99999')),
  cvc: mostly(fc.constantFrom('123', '1234'), fc.constantFrom('12', 'abc', 12345, 123)),
  allowed_scopes: mostly(
    fc.constantFrom('', 'checkout:create', 'payments:read refunds:write', 'checkout:create,payments:write'),
    fc.constantFrom('bogus', 'refunds:read, ,refunds:write', 'CHECKOUT:CREATE'),
  ),
  // Only the sandbox takes it (a production key is refused): mostly left null.
  sandbox_simulate: fc.oneof(
    { weight: 4, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'payment_failed',
        'checkout_canceled',
        'canceled',
        'success_pending_deposit',
        'checkout_pending',
        'explode',
        '',
      ),
    },
  ),
  reason: mostly(
    fc.string({ minLength: 1, maxLength: 40 }),
    fc.constantFrom('simulate:refund_declined', 'simulate:refund_failed', '   ', ''),
  ),
  environment: mostly(fc.constantFrom('production', 'sandbox'), fc.constantFrom('staging', 'PRODUCTION')),
  expires_at: mostly(fc.constantFrom('2099-01-01T00:00:00Z', null), isoDate),
  currency: mostly(fc.constantFrom('USD', 'EUR'), fc.constantFrom('usd', 'GBP')),
  price_mode: mostly(fc.constantFrom('HT', 'TTC'), fc.constantFrom('ht', 'VAT')),
  pricing_mode: mostly(fc.constantFrom('TAX_EXCLUSIVE', 'TAX_INCLUSIVE'), fc.constant('NONE')),
  billing_country: mostly(fc.constantFrom('FR', 'US', 'DE'), fc.constantFrom('XX', 'F', 'fr')),
  quantity: mostly(fc.integer({ min: 1, max: 5 }), fc.integer({ min: -2, max: 100_000 })),
  max_uses: mostly(
    fc.oneof(fc.integer({ min: 1, max: 10 }), fc.constant(null)),
    fc.integer({ min: -1, max: 0 }),
  ),
  metadata: fc.oneof(
    fc.constant(null),
    fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })).map((v) => v as Value),
  ),
};

/** Organization PATCH: the editable fields (mutations add read-only and unknown ones). */
const ORGANIZATION_FIELDS: Record<string, fc.Arbitrary<Value>> = {
  name: fc.string({ minLength: 1, maxLength: 30 }),
  website: urlArb,
  contact_email: emailArb,
  telegram: fc.string({ maxLength: 20 }),
  price_mode: FIELDS.price_mode,
};

/** A checkout line: a catalog product, or an ad hoc item with a name and a price. */
const checkoutItemArb: fc.Arbitrary<Value> = fc.oneof(
  fc
    .record({ id: ref('product'), quantity: FIELDS.quantity }, { requiredKeys: ['id'] })
    .map((v) => v as Value),
  fc
    .record(
      {
        name: fc.string({ minLength: 1, maxLength: 20 }),
        unit_price: FIELDS.unit_price,
        quantity: FIELDS.quantity,
      },
      { requiredKeys: ['name', 'unit_price'] },
    )
    .map((v) => v as Value),
);

function stringArb(schema: JsonSchema): fc.Arbitrary<Value> {
  if (schema.format === 'email') return emailArb;
  if (schema.format === 'uri') return urlArb;
  if (schema.format === 'date-time') return isoDate;
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern));
  const maxLength = Math.min(schema.maxLength ?? 40, 40);
  return fc.string({ minLength: Math.min(schema.minLength ?? 0, maxLength), maxLength });
}

/** Values near the schema: of the right type and mostly within its bounds; known fields get known values. */
export function schemaArb(schema: JsonSchema, name: string, depth = 0): fc.Arbitrary<Value> {
  const known = FIELDS[name];
  if (known) return known;
  if (schema.anyOf && schema.anyOf.length > 0)
    return fc.oneof(...schema.anyOf.map((s) => schemaArb(s, name, depth)));
  if (schema.enum && schema.enum.length > 0) return fc.constantFrom(...(schema.enum as Value[]));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      return stringArb(schema);
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -10, max: Math.min(schema.maximum ?? 1000, 1_000_000) });
    case 'number':
      return moneyArb;
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const items = schema.items ?? {};
      const minLength = schema.minItems ?? 0;
      return fc.array(schemaArb(items, name === 'products' ? 'item' : name, depth + 1), {
        minLength,
        maxLength: Math.max(minLength, Math.min(schema.maxItems ?? 3, 3)),
      });
    }
    case 'object': {
      const properties = schema.properties ?? {};
      if (Object.keys(properties).length === 0 && name === '') {
        return fc.record(ORGANIZATION_FIELDS, { requiredKeys: [] }).map((v) => v as Value);
      }
      if (name === 'item' && 'unit_price' in properties) return checkoutItemArb;
      const model: Record<string, fc.Arbitrary<Value>> = {};
      for (const [key, property] of Object.entries(properties))
        model[key] = schemaArb(property, key, depth + 1);
      return fc
        .record(model, { requiredKeys: (schema.required ?? []).filter((key) => key in model) })
        .map((v) => v as Value);
    }
    default:
      return depth > 2 ? fc.constant(null) : fc.jsonValue({ maxDepth: 2 }).map((v) => v as Value);
  }
}

// ---------------------------------------------------------------------------------------------------
// Mutations and whole bodies

export function deepNesting(depth: number, open = '[', close = ']'): RawJson {
  return new RawJson(`${open.repeat(depth)}1${close.repeat(depth)}`);
}

const INVALID_JSON = [
  '{',
  '{"a":}',
  "{'a': 1}",
  '{"a": 1,}',
  '[1, 2',
  'NaN',
  'undefined',
  '\u0000',
  '\ufeff{}',
  '{"a": "\\ud800"}',
  '{"a": "\\u00"}',
  '{"a":1}{"b":2}',
  '{"a": 01}',
  '{"a": .5}',
  '{"a": Infinity}',
  '"unterminated',
  '{"__proto__": {"polluted": true}}',
  '{"constructor": {"prototype": {"polluted": true}}}',
  '{"a": 1, "a": 2}',
  ' ',
  '\n\t',
];

const anyOdd: fc.Arbitrary<Value> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...ODD_NUMBERS) },
  { weight: 3, arbitrary: unicodeText },
  { weight: 2, arbitrary: fc.constantFrom(...ODD_AMOUNTS) },
  { weight: 1, arbitrary: hugeText },
  { weight: 2, arbitrary: fc.constantFrom<Value>(null, true, false, [], {}, [null], { a: 1 }, '1', 1) },
  { weight: 1, arbitrary: fc.integer({ min: 10, max: 5000 }).map((depth) => deepNesting(depth)) },
  { weight: 1, arbitrary: fc.constant(deepNesting(100_000)) },
  {
    weight: 1,
    arbitrary: fc.integer({ min: 10, max: 2000 }).map((depth) => deepNesting(depth, '{"a":', '}')),
  },
  { weight: 2, arbitrary: ref('payment', 'refund', 'product', 'link', 'checkout', 'apiKey', 'delivery') },
);

const mutationArb: fc.Arbitrary<Mutation> = fc.record({
  kind: fc.constantFrom<Mutation['kind']>(
    'wrongType',
    'remove',
    'remove',
    'extra',
    'replace',
    'replace',
    'replace',
  ),
  at: fc.nat(1000),
  key: fc.oneof(
    fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      'id',
      'organization_id',
      'status',
      'amount',
      'environment',
      'livemode',
      'fee_percent',
      'min_payment',
      'max_active_api_keys',
      'scopes',
      'key_hash',
      '',
    ),
    fc.string({ maxLength: 12 }),
  ),
  value: anyOdd,
});

function bodyArb(operation: Operation): fc.Arbitrary<Body> {
  const junk: fc.Arbitrary<Body> = fc.oneof(
    fc.constantFrom(...INVALID_JSON).map((text): Body => ({ kind: 'raw', text })),
    anyOdd.map((value): Body => ({ kind: 'json', value, mutations: [] })),
    fc.constant<Body>({ kind: 'raw', text: '' }),
    fc.constant<Body>({ kind: 'raw', text: 'x'.repeat(1_100_000) }),
  );
  if (!operation.body) {
    return fc.oneof(
      { weight: 6, arbitrary: fc.constant<Body>({ kind: 'none' }) },
      {
        weight: 2,
        arbitrary: fc
          .jsonValue({ maxDepth: 2 })
          .map((value): Body => ({ kind: 'json', value: value as Value, mutations: [] })),
      },
      { weight: 1, arbitrary: junk },
    );
  }
  const valid = schemaArb(operation.body, '');
  return fc.oneof(
    { weight: 4, arbitrary: valid.map((value): Body => ({ kind: 'json', value, mutations: [] })) },
    {
      weight: 6,
      arbitrary: fc
        .tuple(valid, fc.array(mutationArb, { minLength: 1, maxLength: 3 }))
        .map(([value, mutations]): Body => ({ kind: 'json', value, mutations })),
    },
    { weight: 1, arbitrary: fc.constant<Body>({ kind: 'none' }) },
    { weight: 2, arbitrary: junk },
  );
}

// ---------------------------------------------------------------------------------------------------
// Path parameters, query strings, headers, callers

/** The identifier kind a path parameter of an operation names. */
export function paramKind(operation: Operation, param: string): RefKind | null {
  const path = operation.path;
  if (param === 'slug') return 'slug';
  if (param === 'plan') return 'plan';
  if (param === 'token') return path.includes('payment-links') ? 'link' : 'checkoutToken';
  if (path.startsWith('/pay/')) return 'link';
  if (path.includes('/transactions/'))
    return operation.environment === 'sandbox' ? 'sandboxPayment' : 'payment';
  if (path.includes('/refunds/')) return operation.environment === 'sandbox' ? 'sandboxRefund' : 'refund';
  if (path.includes('/payment-links/')) return 'link';
  if (path.includes('/payments/')) return 'payment';
  if (path.includes('/products/')) return 'product';
  if (path.includes('/api-keys/')) return 'apiKey';
  if (path.includes('/deliveries/')) return 'delivery';
  if (path.includes('/members/')) return 'member';
  if (path.includes('/invitations/')) return 'invitation';
  if (path.includes('/auth/sessions/')) return 'session';
  if (path.includes('/subscriptions/plans/')) return 'plan';
  if (path.includes('/subscriptions/')) return 'subscription';
  return null;
}

const shapedParam = fc.oneof(
  fc.constantFrom(
    '0',
    '-1',
    '1',
    '2',
    '01',
    '1e3',
    '0x1F',
    '2147483648',
    '9223372036854775808',
    '999999999999999',
    '99999999999999999999',
    '1.5',
    'NaN',
    'null',
    'simulator',
    'index.html',
    'assets',
    'favicon.ico',
  ),
  fc.stringMatching(/^TX[0-9A-Za-z]{16}$/),
  fc.stringMatching(/^RF[0-9A-Za-z]{16}$/),
  fc.stringMatching(/^prod_[0-9A-Za-z]{14}$/),
  fc.stringMatching(/^CO[0-9A-Za-z]{20}$/),
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.base64String({ minLength: 40, maxLength: 44 }).map((s) => s.replace(/\+/g, '-').replace(/\//g, '_')),
  fc.string({ minLength: 1, maxLength: 20 }),
);

const rawParam = fc.constantFrom(
  '..',
  '../..',
  '../../../etc/passwd',
  '..%2f..%2fetc%2fpasswd',
  '%2e%2e',
  '%2e%2e%2f%2e%2e%2f',
  '....//',
  '..\\..\\',
  '.%2e/',
  '%252e%252e',
  '%',
  '%zz',
  '%00',
  '%2F',
  '%E2%82%AC',
  '%C0%AF',
  '%ff',
  '%u0041',
  '%0d%0aSet-Cookie:%20x=1',
  ';',
  '.',
  '~',
  '*',
  'a/b',
  '',
  'x'.repeat(250),
);

function paramArb(operation: Operation, param: string): fc.Arbitrary<RequestPlan['params'][number]> {
  const kind = paramKind(operation, param);
  const anyRef = ref(
    'payment',
    'sandboxPayment',
    'refund',
    'product',
    'link',
    'apiKey',
    'delivery',
    'checkout',
    'payout',
  );
  return fc.oneof(
    { weight: kind ? 8 : 0, arbitrary: kind ? ref(kind) : anyRef },
    { weight: 2, arbitrary: anyRef },
    { weight: 3, arbitrary: shapedParam.map((text) => ({ text, raw: false })) },
    { weight: 2, arbitrary: rawParam.map((text) => ({ text, raw: true })) },
    { weight: 1, arbitrary: unicodeText.map((text) => ({ text, raw: false })) },
  );
}

const QUERY_NAMES = [
  'page',
  'page_size',
  'status',
  'ordering',
  'search',
  'environment',
  'created_at__gte',
  'created_at__lte',
  'after',
  'limit',
  'subject',
  'event',
  'currency',
  '__proto__',
  'constructor',
  'a[b]',
  '',
];

const queryValue: fc.Arbitrary<Ref | string> = fc.oneof(
  fc.constantFrom(
    '',
    '1',
    '2',
    '0',
    '-1',
    '100',
    '101',
    '1e3',
    '99999999999',
    'NaN',
    'sandbox',
    'production',
    'paid',
    'processing',
    'completed',
    'pending',
    'delivered',
    'webhook.test',
    '-created_at',
    'amount',
    '-status',
    'created_at;DROP',
    '2026-01-01T00:00:00Z',
    '2026-01-01',
    'not-a-date',
    '9999-99-99',
    "' OR 1=1 --",
    '%',
    '_',
    '\\',
  ),
  unicodeText,
  fc.constantFrom('a'.repeat(5000)),
  ref('payment', 'refund', 'checkout'),
);

function queryArb(operation: Operation): fc.Arbitrary<RequestPlan['query']> {
  const names = [...new Set([...operation.query.map((q) => q.name), ...QUERY_NAMES])];
  const entry = fc.tuple(
    fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 8 })),
    queryValue,
    fc.constant(false),
  );
  const rawEntry = fc.tuple(
    fc.constantFrom(...names),
    fc.constantFrom('%zz', '%', '%00', '%E0%A4%A', 'a&b=c', '=', 'x#y'),
    fc.constant(true),
  );
  return fc.oneof(
    { weight: 4, arbitrary: fc.constant<RequestPlan['query']>([]) },
    {
      weight: 5,
      arbitrary: fc.array(entry, { minLength: 1, maxLength: 4 }).map((q): RequestPlan['query'] => q),
    },
    {
      weight: 1,
      arbitrary: fc.array(rawEntry, { minLength: 1, maxLength: 2 }).map((q): RequestPlan['query'] => q),
    },
  );
}

const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'APPLICATION/JSON',
  'application/json-patch+json',
  'application/xml',
  '*/*',
  'application/jsonx',
  'application/json;',
  '',
];

const headerArb: fc.Arbitrary<[string, string]> = fc.oneof(
  fc.tuple(
    fc.constant('host'),
    fc.constantFrom('evil.example', 'a b', '[', ']:80', 'localhost:99999', '', '::1', '%00'),
  ),
  fc.tuple(fc.constant('x-request-id'), fc.constantFrom('', 'a b', 'x'.repeat(500), '../../', 'ok-id.1:2')),
  fc.tuple(fc.constant('x-forwarded-for'), fc.constantFrom('1.2.3.4', 'garbage', '::1, 10.0.0.1')),
  fc.tuple(fc.constant('accept'), fc.constantFrom('text/html', 'application/xml', '*/*', '')),
  fc.tuple(
    fc.constant('accept-encoding'),
    fc.constantFrom('gzip', 'br', 'deflate, gzip;q=0', 'identity;q=0', '*'),
  ),
  fc.tuple(fc.constant('idempotency-key'), fc.constantFrom('', 'x'.repeat(300))),
  fc.tuple(fc.constant('x-requested-with'), fc.constant('XMLHttpRequest')),
  fc.tuple(fc.constant('if-none-match'), fc.constantFrom('*', '"x"', 'W/"y"')),
);

const GARBAGE_AUTH = [
  'Token ',
  'Token x',
  'Token',
  'token short',
  'Api-Key ',
  'Api-Key',
  'Api-Key kassa_live_',
  'Api-Key kassa_live_0000000000000000000000000000000000000000',
  'Api-Key kassa_test_0000000000000000000000000000000000000000',
  'Api-Key kassa_prod_0000000000000000000000000000000000000000',
  'Bearer abc',
  'Basic YTpi',
  'Token 0000000000000000000000000000000000000000000',
  'Api-Key  kassa_live_%00',
  'cookie:kassa_session=%E0%A4%A',
  'cookie:kassa_session=',
  'cookie:kassa_session=0000000000000000000000000000000000000000000',
  'cookie:kassa_session=a;kassa_session=b',
  'apikey:kassa_live_short',
  'apikey:',
];

export function planArb(operations: Operation[]): fc.Arbitrary<RequestPlan> {
  // One arbitrary per operation, built once: building them is far dearer than drawing from them.
  const perOperation = operations.map((operation, index) => operationPlanArb(operation, index));
  return fc.nat(operations.length - 1).chain((index) => perOperation[index]);
}

function operationPlanArb(operation: Operation, index: number): fc.Arbitrary<RequestPlan> {
  return fc.record({
    operation: fc.constant(index),
    method: fc.oneof(
      { weight: 12, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD') },
    ),
    caller: fc.constantFrom<Caller>(
      'matching',
      'matching',
      'matching',
      'matching',
      'none',
      'session',
      'cookie',
      'cookieWithoutHeader',
      'prodKey',
      'prodKeyHeader',
      'sandboxKey',
      'revokedKey',
      'garbage',
    ),
    garbage: fc.constantFrom(...GARBAGE_AUTH),
    params: fc.tuple(...operation.pathParams.map((param) => paramArb(operation, param))),
    query: queryArb(operation),
    body: bodyArb(operation),
    contentType: fc.oneof(
      { weight: 12, arbitrary: fc.constant(null) },
      { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
    ),
    headers: fc.oneof(
      { weight: 8, arbitrary: fc.constant<[string, string][]>([]) },
      { weight: 1, arbitrary: fc.array(headerArb, { minLength: 1, maxLength: 2 }) },
    ),
  });
}

// ---------------------------------------------------------------------------------------------------
// Materialization

export interface Fixtures {
  own: OrgFixture;
  other: OrgFixture;
}

function resolveRef(value: Ref, fixtures: Fixtures, audience: Operation['audience']): string {
  if (value.kind === 'email') return fixtures.own.email;
  if (value.kind === 'password') return fixtures.own.password;
  // Tokens and slugs are capabilities, and public routes act for whoever holds them: only the own ones.
  const owner =
    value.kind === 'checkoutToken' || value.kind === 'slug' || audience === 'public' || audience === 'page'
      ? 'own'
      : value.owner;
  const list = fixtures[owner].refs[value.kind];
  return list.length === 0 ? 'missing' : list[value.index % list.length];
}

function resolveValue(value: Value, fixtures: Fixtures, audience: Operation['audience']): Value {
  if (value instanceof Ref) return resolveRef(value, fixtures, audience);
  if (value instanceof RawJson || value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((item) => resolveValue(item, fixtures, audience));
  const out: Record<string, Value> = {};
  for (const key of Object.keys(value)) define(out, key, resolveValue(value[key], fixtures, audience));
  return out;
}

/** Sets a property, also one named __proto__, as an own property (never the prototype). */
function define(target: Record<string, Value>, key: string, value: Value) {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

type Slot = { parent: Value[] | Record<string, Value>; key: string | number };

function slots(value: Value, out: Slot[] = [], depth = 0): Slot[] {
  if (
    depth > 6 ||
    value === null ||
    typeof value !== 'object' ||
    value instanceof Ref ||
    value instanceof RawJson
  )
    return out;
  if (Array.isArray(value)) {
    value.forEach((item, index) => {
      out.push({ parent: value, key: index });
      slots(item, out, depth + 1);
    });
  } else {
    for (const key of Object.keys(value)) {
      out.push({ parent: value, key });
      slots(value[key], out, depth + 1);
    }
  }
  return out;
}

function wrongTypeOf(value: Value): Value {
  if (typeof value === 'string') return value.length % 2 ? 12 : [value];
  if (typeof value === 'number') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 1;
  if (value === null) return {};
  if (Array.isArray(value)) return value.length ? { 0: value[0] } : 'array';
  if (typeof value === 'object') return [value];
  return null;
}

/** A copy of the plain arrays and objects (constants are shared between plans and must stay intact). */
function copy(value: Value): Value {
  if (value === null || typeof value !== 'object' || value instanceof Ref || value instanceof RawJson)
    return value;
  if (Array.isArray(value)) return value.map(copy);
  const out: Record<string, Value> = {};
  for (const key of Object.keys(value)) define(out, key, copy(value[key]));
  return out;
}

/** Applies the mutations to a resolved body (a fresh copy: resolveValue copied every object). */
function mutate(value: Value, mutations: Mutation[]): Value {
  let root: Value = value;
  for (const { value: shared, ...rest } of mutations) {
    const mutation = { ...rest, value: copy(shared) };
    const all = slots(root);
    if (all.length === 0 || mutation.at % (all.length + 1) === all.length) {
      root =
        mutation.kind === 'wrongType'
          ? wrongTypeOf(root)
          : mutation.kind === 'replace'
            ? mutation.value
            : root;
      if (mutation.kind === 'extra' && root !== null && typeof root === 'object' && !Array.isArray(root))
        define(root as Record<string, Value>, mutation.key, mutation.value);
      continue;
    }
    const { parent, key } = all[mutation.at % all.length];
    const current = (parent as Record<string, Value>)[key];
    if (mutation.kind === 'remove') {
      if (Array.isArray(parent)) parent.splice(Number(key), 1);
      else delete parent[String(key)];
    } else if (mutation.kind === 'wrongType') {
      (parent as Record<string, Value>)[key] = wrongTypeOf(current);
    } else if (mutation.kind === 'replace') {
      (parent as Record<string, Value>)[key] = mutation.value;
    } else if (
      current !== null &&
      typeof current === 'object' &&
      !Array.isArray(current) &&
      !(current instanceof RawJson)
    ) {
      define(current as Record<string, Value>, mutation.key, mutation.value);
    } else if (!Array.isArray(parent)) {
      define(parent, mutation.key, mutation.value);
    }
  }
  return root;
}

/** JSON text of a value; RawJson is written as is (so 1e400 and deep nesting reach the server). */
export function jsonText(value: Value): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof Ref) return JSON.stringify(`${value.kind}:${value.index}`);
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(jsonText).join(',')}]`;
  return `{${Object.keys(value)
    .map((key) => `${JSON.stringify(key)}:${jsonText(value[key])}`)
    .join(',')}}`;
}

function callerHeaders(caller: Caller, plan: RequestPlan, operation: Operation, fixture: OrgFixture) {
  let effective = caller;
  if (caller === 'matching') {
    effective =
      operation.audience === 'session'
        ? 'session'
        : operation.audience === 'apiKey' || operation.path.includes('sync-status')
          ? operation.environment === 'sandbox'
            ? 'sandboxKey'
            : 'prodKey'
          : 'none';
  }
  const headers: Record<string, string> = {};
  switch (effective) {
    case 'session':
      headers.authorization = `Token ${fixture.session}`;
      break;
    case 'cookie':
      headers.cookie = `kassa_session=${fixture.session}`;
      headers['x-requested-with'] = 'XMLHttpRequest';
      break;
    case 'cookieWithoutHeader':
      headers.cookie = `theme=dark; kassa_session=${fixture.session}`;
      break;
    case 'prodKey':
      headers.authorization = `Api-Key ${fixture.prodKey}`;
      break;
    case 'prodKeyHeader':
      headers['api-key'] = fixture.prodKey;
      break;
    case 'sandboxKey':
      headers.authorization = `Api-Key ${fixture.sandboxKey}`;
      break;
    case 'revokedKey':
      headers.authorization = `Api-Key ${fixture.revokedKeys[plan.operation % fixture.revokedKeys.length]}`;
      break;
    case 'garbage':
      if (plan.garbage.startsWith('cookie:')) headers.cookie = plan.garbage.slice('cookie:'.length);
      else if (plan.garbage.startsWith('apikey:')) headers['api-key'] = plan.garbage.slice('apikey:'.length);
      else headers.authorization = plan.garbage;
      break;
  }
  return { headers, effective };
}

export interface Materialized {
  request: RawRequest;
  operation: Operation;
  caller: Caller;
}

/** The bytes of a plan for one organization (the other organization's ids where the plan asks for them). */
export function materialize(plan: RequestPlan, operations: Operation[], fixtures: Fixtures): Materialized {
  const operation = operations[plan.operation];
  const { headers, effective } = callerHeaders(plan.caller, plan, operation, fixtures.own);
  let index = 0;
  let path = operation.path.replace(/\{(\w+)\}/g, () => {
    const param = plan.params[index];
    index += 1;
    if (param instanceof Ref) return encodePart(resolveRef(param, fixtures, operation.audience));
    return param.raw ? param.text : encodePart(param.text);
  });
  const query = plan.query.map(([name, value, raw]) => {
    let text = value instanceof Ref ? resolveRef(value, fixtures, operation.audience) : value;
    // A long poll would hold the lane for up to 30 s: never ask the events feed to wait.
    if (name === 'wait') text = '0';
    return raw ? `${encodePart(name)}=${text}` : `${encodePart(name)}=${encodePart(text)}`;
  });
  if (query.length > 0) path += `?${query.join('&')}`;
  let body: string | undefined;
  if (plan.body.kind === 'raw') body = plan.body.text;
  else if (plan.body.kind === 'json')
    body = jsonText(mutate(resolveValue(plan.body.value, fixtures, operation.audience), plan.body.mutations));
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (plan.contentType !== null) {
    if (plan.contentType === '') delete headers['content-type'];
    else headers['content-type'] = plan.contentType;
  }
  for (const [name, value] of plan.headers) headers[name] = value;
  const method = plan.method ?? operation.method;
  return { request: { method, path, headers, body }, operation, caller: effective };
}
