// Search everywhere (the dashboard's search box): one query over the payments (payment or checkout id,
// customer email, a card's last 4 digits) and the refunds (refund or payment id, reason) of one
// organization and environment, newest first. Subscriptions join when they exist: one more source here.
import type { Executor } from '../../db/database.ts';
import { ValidationError } from '../../http/errors.ts';
import { MAX_SEARCH_LENGTH } from '../../http/pagination.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { matchesSearch } from '../payments/list.ts';
import { filteredRefunds } from '../refunds/list.ts';

/** Results per kind. */
export const SEARCH_LIMIT = 10;

export interface SearchResult {
  type: 'payment' | 'refund';
  id: string;
  /** The payment itself, or the refunded payment: where the dashboard opens the result. */
  payment_id: string;
  /** What the row is about, in a few words: the customer's email, the refund's reason. */
  summary: string;
  status: string;
  amount: string;
  currency: string;
  environment: Environment;
  created_at: string;
}

export function parseSearchText(raw: unknown): string {
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (!text) throw new ValidationError('q: may not be blank.');
  if (text.length > MAX_SEARCH_LENGTH)
    throw new ValidationError(`q: must be at most ${MAX_SEARCH_LENGTH} characters.`);
  return text;
}

async function searchPayments(db: Executor, organizationId: number, environment: Environment, text: string) {
  const rows = await db
    .selectFrom('payments')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment)
    .where(matchesSearch(text))
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(SEARCH_LIMIT)
    .execute();
  return rows.map(
    (row): SearchResult => ({
      type: 'payment',
      id: row.public_id,
      payment_id: row.public_id,
      summary: row.payer_email ?? '',
      status: row.status,
      amount: formatAmount(toBigInt(row.gross)),
      currency: row.currency,
      environment: row.environment,
      created_at: row.created_at,
    }),
  );
}

async function searchRefunds(db: Executor, organizationId: number, environment: Environment, text: string) {
  const rows = await filteredRefunds(db, { organizationId, environment }, { search: text })
    .orderBy('refunds.created_at', 'desc')
    .orderBy('refunds.id', 'desc')
    .limit(SEARCH_LIMIT)
    .execute();
  return rows.map(
    (row): SearchResult => ({
      type: 'refund',
      id: row.public_id,
      payment_id: row.payment_public_id,
      summary: `${row.payment_public_id} · ${row.reason}`,
      status: row.status,
      amount: formatAmount(toBigInt(row.amount)),
      currency: row.currency,
      environment: row.environment,
      created_at: row.created_at,
    }),
  );
}

/** GET /api/search/?q=&environment= */
export async function search(db: Executor, organizationId: number, environment: Environment, raw: unknown) {
  const text = parseSearchText(raw);
  const [payments, refunds] = await Promise.all([
    searchPayments(db, organizationId, environment, text),
    searchRefunds(db, organizationId, environment, text),
  ]);
  return { query: text, environment, results: [...payments, ...refunds] };
}
