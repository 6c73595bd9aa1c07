// The wallet as the dashboard sees it: buckets, what is available, and the recent movements.
// Also the ledger audit used by tests and operators: entries balance and buckets equal their sums.
import type { Executor } from '../../db/database.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { availableOf, type Buckets, bucketsOf } from './ledger.ts';
import * as store from './store.ts';
import type { LedgerAccount, WalletMovementRow } from './table.ts';

const EMPTY: Buckets = { balance: 0n, reserve: 0n, held: 0n };

export function presentBuckets(buckets: Buckets) {
  return {
    balance: formatAmount(buckets.balance),
    reserve: formatAmount(buckets.reserve),
    held: formatAmount(buckets.held),
    available: formatAmount(availableOf(buckets)),
    currency: 'USD' as const,
  };
}

export async function walletBuckets(db: Executor, organizationId: number, environment: Environment) {
  const row = await store.findWallet(db, organizationId, environment);
  return row ? bucketsOf(row) : EMPTY;
}

/** The dashboard snapshot's wallet part. */
export async function walletSummary(db: Executor, organizationId: number, environment: Environment) {
  return presentBuckets(await walletBuckets(db, organizationId, environment));
}

function presentMovement(row: WalletMovementRow, deltas: Partial<Record<LedgerAccount, bigint>>) {
  const delta = (account: LedgerAccount) => formatAmount(deltas[account] ?? 0n);
  return {
    id: row.id,
    type: row.kind,
    reference: row.reference_public_id,
    amount: formatAmount(toBigInt(row.amount)),
    balance_change: delta('balance'),
    reserve_change: delta('reserve'),
    held_change: delta('held'),
    created_at: row.created_at,
  };
}

export async function recentActivity(
  db: Executor,
  organizationId: number,
  environment: Environment,
  limit = 20,
) {
  const wallet = await store.findWallet(db, organizationId, environment);
  if (!wallet) return [];
  const movements = await store.recentMovements(db, wallet.id, limit);
  const entries = await store.entriesOfMovements(
    db,
    movements.map((movement) => movement.id),
  );
  const deltas = new Map<number, Partial<Record<LedgerAccount, bigint>>>();
  for (const entry of entries) {
    const forMovement = deltas.get(entry.movement_id) ?? {};
    forMovement[entry.account] = (forMovement[entry.account] ?? 0n) + toBigInt(entry.amount);
    deltas.set(entry.movement_id, forMovement);
  }
  return movements.map((movement) => presentMovement(movement, deltas.get(movement.id) ?? {}));
}

/** GET /api/wallet/ */
export async function walletView(db: Executor, organizationId: number, environment: Environment) {
  return {
    ...(await walletSummary(db, organizationId, environment)),
    environment,
    entries: await recentActivity(db, organizationId, environment),
  };
}

export interface LedgerAudit {
  buckets: Buckets;
  /** Sum per account of every entry. */
  totals: Partial<Record<LedgerAccount, bigint>>;
  problems: string[];
}

/** Checks a wallet against its ledger: every movement sums to zero and every bucket equals its entries. */
export async function auditWallet(
  db: Executor,
  organizationId: number,
  environment: Environment,
): Promise<LedgerAudit> {
  const row = await store.findWallet(db, organizationId, environment);
  if (!row) return { buckets: EMPTY, totals: {}, problems: [] };
  const buckets = bucketsOf(row);
  const totals: Partial<Record<LedgerAccount, bigint>> = {};
  for (const { account, total } of await store.accountTotals(db, row.id)) totals[account] = toBigInt(total);
  const problems: string[] = [];
  for (const bucket of ['balance', 'reserve', 'held'] as const) {
    if ((totals[bucket] ?? 0n) !== buckets[bucket])
      problems.push(`${bucket} is ${buckets[bucket]} but its entries sum to ${totals[bucket] ?? 0n}`);
    if (buckets[bucket] < 0n) problems.push(`${bucket} is negative: ${buckets[bucket]}`);
  }
  if ((totals.hold_offset ?? 0n) !== -buckets.held) problems.push('hold_offset does not mirror held');
  if (buckets.held > buckets.balance + buckets.reserve) problems.push('held exceeds balance + reserve');
  const grand = Object.values(totals).reduce((sum, value) => sum + (value ?? 0n), 0n);
  if (grand !== 0n) problems.push(`entries sum to ${grand}, not 0`);
  for (const movement of await store.unbalancedMovements(db, row.id)) {
    problems.push(`movement ${movement.movement_id} sums to ${movement.total}`);
  }
  return { buckets, totals, problems };
}
