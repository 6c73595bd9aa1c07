// What each export streams: the rows of one organization and environment that the list page's filters
// select, newest first, batch by batch (keyset on the id, so each query is an index range, never an
// OFFSET that grows), and the cells of each row. Amounts are decimal strings, times ISO 8601 UTC.
import type { Executor } from '../../db/database.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { filteredPayments, type parseListQuery } from '../payments/list.ts';
import { attemptsByPayment, checkoutReferences } from '../payments/store.ts';
import type { PaymentRow } from '../payments/table.ts';
import { destinationLabel } from '../payouts/destinations.ts';
import { destinationsOf } from '../payouts/service.ts';
import type { PayoutRow } from '../payouts/table.ts';
import { filteredRefunds, type parseRefundFilters } from '../refunds/list.ts';
import type { RefundWithPayment } from '../refunds/store.ts';
import { entriesOfMovements, findWallet } from '../wallet/store.ts';
import type { LedgerAccount, WalletMovementRow } from '../wallet/table.ts';
import { BATCH_SIZE, type CsvSource, olderThan } from './csv.ts';

const amount = (minor: number | string | bigint) => formatAmount(toBigInt(minor));

export function paymentsSource(
  db: Executor,
  organizationId: number,
  filters: ReturnType<typeof parseListQuery>,
): CsvSource<PaymentRow> {
  const base = filteredPayments(db, organizationId, filters);
  return {
    header: [
      'id',
      'created_at',
      'updated_at',
      'environment',
      'status',
      'currency',
      'amount',
      'fee',
      'net_amount',
      'net_usd',
      'refunded_amount',
      'payer_email',
      'products',
      'card',
      'checkout_id',
      'payment_link_id',
    ],
    fetch: (last) =>
      (last === null ? base : base.where(olderThan('payments', last)))
        .selectAll('payments')
        .orderBy('payments.created_at', 'desc')
        .orderBy('payments.id', 'desc')
        .limit(BATCH_SIZE)
        .execute(),
    async cells(rows) {
      const [attempts, checkouts] = await Promise.all([
        attemptsByPayment(
          db,
          rows.map((row) => row.id),
        ),
        checkoutReferences(
          db,
          rows.map((row) => row.checkout_session_id),
        ),
      ]);
      return rows.map((row) => {
        const card = (attempts.get(row.id) ?? []).find((attempt) => attempt.card_last4);
        return [
          row.public_id,
          row.created_at,
          row.updated_at,
          row.environment,
          row.status,
          row.currency,
          amount(row.gross),
          amount(row.fee),
          amount(row.net),
          amount(row.net_usd),
          amount(row.refunded_amount),
          row.payer_email,
          (JSON.parse(row.products) as { name: string }[]).map((product) => product.name).join('; '),
          card ? `${card.card_brand ?? 'card'} ${card.card_last4}` : '',
          checkouts.get(row.checkout_session_id)?.public_id,
          row.payment_link_id,
        ];
      });
    },
  };
}

export function refundsSource(
  db: Executor,
  organizationId: number,
  environment: Environment,
  filters: ReturnType<typeof parseRefundFilters>,
): CsvSource<RefundWithPayment> {
  const base = filteredRefunds(db, { organizationId, environment }, filters);
  return {
    header: [
      'id',
      'transaction_id',
      'created_at',
      'updated_at',
      'environment',
      'status',
      'currency',
      'amount',
      'amount_usd',
      'reason',
    ],
    fetch: (last) =>
      (last === null ? base : base.where(olderThan('refunds', last)))
        .orderBy('refunds.created_at', 'desc')
        .orderBy('refunds.id', 'desc')
        .limit(BATCH_SIZE)
        .execute(),
    cells: (rows) =>
      rows.map((row) => [
        row.public_id,
        row.payment_public_id,
        row.created_at,
        row.updated_at,
        row.environment,
        row.status,
        row.currency,
        amount(row.amount),
        amount(row.amount_usd),
        row.reason,
      ]),
  };
}

export function payoutsSource(
  db: Executor,
  organizationId: number,
  environment: Environment,
): CsvSource<PayoutRow> {
  const base = db
    .selectFrom('payouts')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment);
  return {
    header: [
      'id',
      'created_at',
      'updated_at',
      'environment',
      'status',
      'currency',
      'amount',
      'destination',
      'account_holder',
    ],
    fetch: (last) =>
      (last === null ? base : base.where(olderThan('payouts', last)))
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .limit(BATCH_SIZE)
        .execute(),
    async cells(rows) {
      const destinations = await destinationsOf(db, rows);
      return rows.map((row) => {
        const destination = destinations.get(row.destination_id ?? 0);
        return [
          row.public_id,
          row.created_at,
          row.updated_at,
          row.environment,
          row.status,
          row.currency,
          amount(row.amount),
          destination ? destinationLabel(destination) : '',
          destination?.account_holder,
        ];
      });
    },
  };
}

export interface LedgerFilters {
  createdFrom?: string;
  createdTo?: string;
}

/** Every movement of the environment's wallet with what it changed in each bucket. */
export async function walletSource(
  db: Executor,
  organizationId: number,
  environment: Environment,
  filters: LedgerFilters,
): Promise<CsvSource<WalletMovementRow>> {
  const wallet = await findWallet(db, organizationId, environment);
  let base = db
    .selectFrom('wallet_movements')
    .selectAll()
    .where('wallet_id', '=', wallet?.id ?? -1);
  if (filters.createdFrom) base = base.where('created_at', '>=', filters.createdFrom);
  if (filters.createdTo) base = base.where('created_at', '<=', filters.createdTo);
  return {
    header: [
      'id',
      'created_at',
      'type',
      'reference',
      'amount',
      'balance_change',
      'reserve_change',
      'held_change',
    ],
    // The movements' (wallet_id, id) index: ids follow time within a wallet.
    fetch: (last) =>
      (last === null ? base : base.where('id', '<', last.id))
        .orderBy('id', 'desc')
        .limit(BATCH_SIZE)
        .execute(),
    async cells(rows) {
      const entries = await entriesOfMovements(
        db,
        rows.map((row) => row.id),
      );
      const deltas = new Map<string, bigint>();
      for (const entry of entries) {
        const key = `${entry.movement_id}:${entry.account}`;
        deltas.set(key, (deltas.get(key) ?? 0n) + toBigInt(entry.amount));
      }
      const change = (id: number, account: LedgerAccount) =>
        formatAmount(deltas.get(`${id}:${account}`) ?? 0n);
      return rows.map((row) => [
        row.id,
        row.created_at,
        row.kind,
        row.reference_public_id,
        amount(row.amount),
        change(row.id, 'balance'),
        change(row.id, 'reserve'),
        change(row.id, 'held'),
      ]);
    },
  };
}
