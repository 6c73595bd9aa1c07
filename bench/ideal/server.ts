// The ideal: the least a server can do to answer GET /api/transactions/{id}/ and POST /api/checkout/create/
// as Kassa does, on the same stack (this Node, Fastify with Kassa's router and validator options, the same
// database file or schema, `node:sqlite` / `pg` directly). `npm run bench` measures it beside Kassa and
// reports Kassa's CPU per request as a share of it (bench/ideal/README.md says what it keeps and leaves out).
//
// What it keeps: the API key's format check, its SHA-256 lookup, the active / environment / scope checks and
// the once-a-minute `last_used_at` write; the body schema (the same TypeBox schema, validated by Ajv with
// Kassa's options); the same cleaning of the body, pricing and payment limits (Kassa's own pure functions);
// the same durable insert of the whole checkout row; the same response bytes (Kassa's presenter, serialised
// with JSON.stringify as Kassa's serializer does). What it leaves out: Kysely, transactions around a single
// statement, request ids, the rate limiter, idempotency, metrics, security headers, audit of key addresses,
// the worker.
//
// Statements: GET is the key and one join (payment, checkout references, attempts); checkout is the key
// joined with the organization's terms, and the insert (its own transaction). PostgreSQL statements go by name.
import { DatabaseSync } from 'node:sqlite';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import pg from 'pg';
import { loadConfig } from '../../src/config.ts';
import { isPublicId, newPublicId, newToken, sha256Hex } from '../../src/lib/ids.ts';
import { formatAmount, toBigInt } from '../../src/lib/money.ts';
import { allowsAny } from '../../src/modules/api-keys/scopes.ts';
import { parseBillingAndUrls, parseSimulate } from '../../src/modules/checkout/input.ts';
import { type CheckoutItem, checkoutTotals, type PriceMode } from '../../src/modules/checkout/pricing.ts';
import { CreateCheckoutBody, type CreateCheckoutInput } from '../../src/modules/checkout/schemas.ts';
import { storedItems } from '../../src/modules/checkout/service.ts';
import { SESSION_COLUMNS } from '../../src/modules/checkout/store.ts';
import { presentPayment } from '../../src/modules/payments/present.ts';
import type { DepositAttemptRow, PaymentRow } from '../../src/modules/payments/table.ts';
import { parsePrice } from '../../src/modules/products/service.ts';

pg.types.setTypeParser(20, (value) => Number(value));

const config = loadConfig(process.env);
const ENVIRONMENT = 'production';
const TOUCH_INTERVAL_MS = 60 * 1000;
const KEY_FORMAT = /^kassa_(live|test)_[0-9A-Za-z]{40}$/;

class Refused extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, message: string) {
    super(message);
    this.statusCode = statusCode;
  }
}

interface KeyRow {
  id: number;
  organization_id: number;
  environment: string;
  scopes: string | null;
  status: string;
  last_used_at: string | null;
}

interface TermsRow extends KeyRow {
  organization_status: string;
  price_mode: PriceMode;
  tax_rate_bp: number;
  min_payment: number;
  max_payment: number;
}

/** One row per attempt (or one with null attempt columns): the payment, its checkout's references, an attempt. */
interface PaymentJoinRow {
  public_id: string;
  gross: number;
  net: number;
  status: string;
  currency: string;
  payer_email: string | null;
  products: string;
  fee_bp: number;
  net_usd: number;
  simulated: number;
  created_at: string;
  updated_at: string;
  checkout_public_id: string | null;
  checkout_metadata: string | null;
  checkout_client_reference_id: string | null;
  checkout_subscription_public_id: string | null;
  attempt_id: number | null;
  attempt_status: string;
  attempt_payment_id: string | null;
  attempt_at: string;
  attempt_error: string | null;
  attempt_method: string | null;
}

const KEY_SQL =
  'select id, organization_id, environment, scopes, status, last_used_at from api_keys where key_hash = $1';
const KEY_TERMS_SQL = `select k.id, k.organization_id, k.environment, k.scopes, k.status, k.last_used_at,
  o.status as organization_status, o.price_mode, o.tax_rate_bp, o.min_payment, o.max_payment
  from api_keys k join organizations o on o.id = k.organization_id where k.key_hash = $1`;
const TOUCH_SQL = 'update api_keys set last_used_at = $1 where id = $2';
const PAYMENT_SQL = `select p.public_id, p.gross, p.net, p.status, p.currency, p.payer_email, p.products, p.fee_bp,
  p.net_usd, p.simulated, p.created_at, p.updated_at,
  c.public_id as checkout_public_id, c.metadata as checkout_metadata,
  c.client_reference_id as checkout_client_reference_id,
  c.subscription_public_id as checkout_subscription_public_id,
  a.id as attempt_id, a.status as attempt_status, a.provider_payment_id as attempt_payment_id,
  a.attempted_at as attempt_at, a.error_message as attempt_error, a.payment_method as attempt_method
  from payments p
  left join checkout_sessions c on c.id = p.checkout_session_id
  left join deposit_attempts a on a.payment_id = p.id
  where p.organization_id = $1 and p.environment = $2 and p.public_id = $3
  order by a.attempted_at desc, a.id desc`;
const INSERT_SQL = `insert into checkout_sessions (${SESSION_COLUMNS.join(', ')}) values (${SESSION_COLUMNS.map(
  (_, index) => `$${index + 1}`,
).join(', ')})`;

type Value = string | number | null;

interface Store {
  rows<Row>(name: string, text: string, values: Value[]): Promise<Row[]>;
  close(): Promise<void>;
}

function sqliteStore(file: string): Store {
  const db = new DatabaseSync(file);
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  db.exec('PRAGMA foreign_keys = ON');
  db.exec('PRAGMA busy_timeout = 5000');
  const statements = new Map<string, ReturnType<DatabaseSync['prepare']>>();
  return {
    async rows<Row>(name: string, text: string, values: Value[]) {
      let statement = statements.get(name);
      if (!statement) {
        // $n → ?n: SQLite's numbered parameters, bound in order.
        statement = db.prepare(text.replace(/\$(\d+)/g, '?$1'));
        statements.set(name, statement);
      }
      if (statement.columns().length === 0) {
        statement.run(...values);
        return [];
      }
      return statement.all(...values) as Row[];
    },
    async close() {
      db.close();
    },
  };
}

function postgresStore(url: string, schema: string | null, poolSize: number): Store {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    options: schema ? `-c search_path=${schema}` : undefined,
  });
  return {
    async rows<Row>(name: string, text: string, values: Value[]) {
      return (await pool.query({ name, text, values })).rows as Row[];
    },
    close: () => pool.end(),
  };
}

const store =
  config.database.kind === 'sqlite'
    ? sqliteStore(config.database.file)
    : postgresStore(config.database.url, config.database.schema, config.database.poolSize);

/** The key of `Authorization: Api-Key …`, checked as Kassa checks it; `withTerms` also reads the organization's terms. */
async function authenticate<Row extends KeyRow>(
  request: FastifyRequest,
  scope: string,
  withTerms: boolean,
): Promise<Row> {
  const header = request.headers.authorization ?? '';
  const raw = header.startsWith('Api-Key ') ? header.slice(8).trim() : '';
  if (!KEY_FORMAT.test(raw)) throw new Refused(401, 'Invalid API key.');
  const [row] = withTerms
    ? await store.rows<Row>('ideal_key_terms', KEY_TERMS_SQL, [sha256Hex(raw)])
    : await store.rows<Row>('ideal_key', KEY_SQL, [sha256Hex(raw)]);
  if (!row || row.status !== 'active') throw new Refused(401, 'Invalid API key.');
  if (row.environment !== ENVIRONMENT) throw new Refused(401, 'Wrong base path for this API key.');
  if (!allowsAny(row.scopes ? row.scopes.split(' ') : [], [scope] as never))
    throw new Refused(403, `This API key lacks the required scope: ${scope}.`);
  const now = Date.now();
  if (!row.last_used_at || now - Date.parse(row.last_used_at) > TOUCH_INTERVAL_MS) {
    const at = new Date(now).toISOString();
    await store.rows('ideal_touch', TOUCH_SQL, [at, row.id]);
    row.last_used_at = at;
  }
  return row;
}

function attemptOf(row: PaymentJoinRow): DepositAttemptRow {
  return {
    status: row.attempt_status,
    provider_payment_id: row.attempt_payment_id,
    attempted_at: row.attempt_at,
    error_message: row.attempt_error,
    payment_method: row.attempt_method,
  } as DepositAttemptRow;
}

const app = Fastify({
  logger: false,
  bodyLimit: config.bodyLimit,
  routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 200 },
  ajv: { customOptions: { coerceTypes: false, removeAdditional: false, allErrors: false } },
});
app.setSerializerCompiler(() => (data) => JSON.stringify(data));
app.setErrorHandler((error: Error & { statusCode?: number }, _request, reply: FastifyReply) => {
  const status = error instanceof Refused ? error.statusCode : (error.statusCode ?? 500);
  reply.code(status).send({ detail: status === 500 ? 'Internal error.' : error.message });
});

app.get<{ Params: { id: string } }>('/api/transactions/:id/', async (request) => {
  const key = await authenticate<KeyRow>(request, 'payments:read', false);
  const id = request.params.id;
  if (!isPublicId('payment', id)) throw new Refused(404, 'Payment not found.');
  const rows = await store.rows<PaymentJoinRow>('ideal_payment', PAYMENT_SQL, [
    key.organization_id,
    ENVIRONMENT,
    id,
  ]);
  const first = rows[0];
  if (!first) throw new Refused(404, 'Payment not found.');
  const attempts = first.attempt_id === null ? [] : rows.map(attemptOf);
  return presentPayment(first as unknown as PaymentRow, attempts, {
    public_id: first.checkout_public_id ?? '',
    metadata: first.checkout_metadata,
    client_reference_id: first.checkout_client_reference_id,
    subscription_public_id: first.checkout_subscription_public_id,
  });
});

app.post<{ Body: CreateCheckoutInput }>(
  '/api/checkout/create/',
  { schema: { body: CreateCheckoutBody } },
  async (request, reply) => {
    const terms = await authenticate<TermsRow>(request, 'checkout:create', true);
    const body = request.body;
    const simulate = parseSimulate(ENVIRONMENT, body.sandbox_simulate);
    const { billing, urls } = parseBillingAndUrls(body);
    const currency = body.currency === 'EUR' ? 'EUR' : 'USD';
    const items: CheckoutItem[] = body.products.map((item, index) => {
      if (item.id !== undefined || item.name === undefined || item.unit_price === undefined)
        throw new Refused(400, 'The ideal takes ad hoc items only (a name and a unit_price).');
      const name = item.name.trim();
      if (!name) throw new Refused(400, `products[${index}].name: may not be blank.`);
      return {
        productId: null,
        name,
        unitPrice: parsePrice(`products[${index}].unit_price`, item.unit_price),
        quantity: item.quantity ?? 1,
      };
    });
    if (terms.organization_status !== 'active') throw new Refused(403, 'This organization is not active.');
    const taxRateBp = toBigInt(terms.tax_rate_bp);
    const totals = checkoutTotals(items, terms.price_mode, taxRateBp);
    if (totals.gross < toBigInt(terms.min_payment) || totals.gross > toBigInt(terms.max_payment))
      throw new Refused(
        400,
        `products: the total ${formatAmount(totals.gross)} ${currency} is out of limits.`,
      );
    const token = newToken();
    const now = new Date();
    const expiresAt = new Date(now.getTime() + config.checkoutTtlS * 1000);
    const publicId = newPublicId('checkout');
    const metadata =
      body.metadata && Object.keys(body.metadata).length ? JSON.stringify(body.metadata) : null;
    const row: Record<(typeof SESSION_COLUMNS)[number], Value> = {
      public_id: publicId,
      token_hash: sha256Hex(token),
      organization_id: terms.organization_id,
      environment: ENVIRONMENT,
      payment_link_id: null,
      currency,
      price_mode: terms.price_mode,
      tax_rate_bp: Number(taxRateBp),
      items: storedItems(items),
      subtotal_ht: Number(totals.subtotalHt),
      tax_amount: Number(totals.tax),
      gross: Number(totals.gross),
      billing_country: billing.country,
      billing_postal_code: billing.postalCode,
      billing_first_name: billing.firstName,
      billing_last_name: billing.lastName,
      billing_email: billing.email,
      billing_phone: billing.phone,
      success_url: urls.success,
      failed_url: urls.failed,
      cancel_url: urls.cancel,
      simulate,
      canceled_at: null,
      attempt_locked_until: null,
      expires_at: expiresAt.toISOString(),
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      metadata,
      client_reference_id: body.client_reference_id?.trim() || null,
      subscription_public_id: null,
      subscription_plan_id: null,
      provider_customer_id: null,
      signup_setup_id: null,
      completed_at: null,
      purpose: null,
    };
    await store.rows(
      'ideal_insert',
      INSERT_SQL,
      SESSION_COLUMNS.map((column) => row[column]),
    );
    return reply.code(201).send({
      checkout_id: publicId,
      order_id: publicId,
      checkout_url: `${config.publicUrl}/checkout/${token}`,
      token,
      expires_at: Math.floor(expiresAt.getTime() / 1000),
    });
  },
);

const url = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`ideal: listening on ${url}`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    app
      .close()
      .then(() => store.close())
      .then(() => process.exit(0));
  });
}
