// The ledger core: lock a wallet, post a movement (entries summing to zero) and apply its bucket
// deltas to the wallet row in the same transaction. Every money change of the wallet goes through here.
import { sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import type { Environment } from '../api-keys/table.ts';
import { type Buckets, bucketsOf } from './arithmetic.ts';
import type { LedgerAccount, MovementKind } from './table.ts';

// The arithmetic lives in arithmetic.ts (pure, mutation-tested); callers may keep importing it from here.
export { availableOf, type Buckets, bucketsOf, lesserOf, splitDebit } from './arithmetic.ts';

export interface LockedWallet extends Buckets {
  id: number;
  organizationId: number;
  environment: Environment;
}

/**
 * The wallet of an organization and environment, created on first use, and locked for the rest of
 * the transaction on PostgreSQL (the upsert's row lock). SQLite serialises whole transactions already.
 */
export async function lockWallet(
  trx: Executor,
  organizationId: number,
  environment: Environment,
  now: string,
): Promise<LockedWallet> {
  const row = await walletUpsert(trx, organizationId, environment, now)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { id: row.id, organizationId, environment, ...bucketsOf(row) };
}

/** An organization's rolling reserve: the share of each settlement held, and for how many days. */
export interface ReserveTerms {
  reserveBp: number;
  reserveDays: number;
}

/**
 * lockWallet, with the organization's rolling-reserve terms read by the same statement (a settlement
 * needs both): one round trip instead of two.
 */
export async function lockWalletWithReserveTerms(
  trx: Executor,
  organizationId: number,
  environment: Environment,
  now: string,
): Promise<{ wallet: LockedWallet; terms: ReserveTerms }> {
  const organization = (column: 'rolling_reserve_bp' | 'rolling_reserve_days') =>
    trx.selectFrom('organizations').select(column).where('organizations.id', '=', organizationId).as(column);
  const row = await walletUpsert(trx, organizationId, environment, now)
    .returningAll()
    .returning([organization('rolling_reserve_bp'), organization('rolling_reserve_days')])
    .executeTakeFirstOrThrow();
  if (row.rolling_reserve_bp === null || row.rolling_reserve_days === null)
    throw new Error(`Organization ${organizationId} does not exist.`);
  return {
    wallet: { id: row.id, organizationId, environment, ...bucketsOf(row) },
    terms: { reserveBp: Number(row.rolling_reserve_bp), reserveDays: Number(row.rolling_reserve_days) },
  };
}

// One statement makes the wallet if it is missing and returns it locked: on a conflict the no-op update
// takes the row lock (as SELECT … FOR UPDATE would) and RETURNING reads its latest version. SQLite has one
// writer, whose transaction already holds the database.
function walletUpsert(trx: Executor, organizationId: number, environment: Environment, now: string) {
  return trx
    .insertInto('wallets')
    .values({
      organization_id: organizationId,
      environment,
      currency: 'USD',
      balance: 0,
      reserve: 0,
      held: 0,
      created_at: now,
      updated_at: now,
    })
    .onConflict((oc) =>
      oc
        .columns(['organization_id', 'environment'])
        .doUpdateSet((eb) => ({ updated_at: eb.ref('wallets.updated_at') })),
    );
}

export interface NewMovement {
  kind: MovementKind;
  referenceId: number;
  referencePublicId: string;
  amount: bigint;
  entries: Partial<Record<LedgerAccount, bigint>>;
  now: string;
}

export class UnbalancedMovementError extends Error {}

const BUCKETS = ['balance', 'reserve', 'held'] as const;

/**
 * Posts a movement on a locked wallet. Returns null (and changes nothing) when this kind of movement
 * was already posted for the reference: each settlement, hold, release and debit happens once.
 * The wallet passed in is updated in place to the new bucket values.
 */
export async function postMovement(
  trx: Executor,
  wallet: LockedWallet,
  movement: NewMovement,
): Promise<number | null> {
  const entries = Object.entries(movement.entries).filter(([, amount]) => amount !== 0n) as [
    LedgerAccount,
    bigint,
  ][];
  const sum = entries.reduce((total, [, amount]) => total + amount, 0n);
  if (sum !== 0n) throw new UnbalancedMovementError(`${movement.kind} entries sum to ${sum}, not 0`);
  const inserted = await trx
    .insertInto('wallet_movements')
    .values({
      wallet_id: wallet.id,
      kind: movement.kind,
      reference_id: movement.referenceId,
      reference_public_id: movement.referencePublicId,
      amount: Number(movement.amount),
      created_at: movement.now,
    })
    .onConflict((oc) => oc.columns(['kind', 'reference_id']).doNothing())
    .returning('id')
    .executeTakeFirst();
  if (!inserted) return null;
  if (entries.length > 0) {
    await trx
      .insertInto('wallet_entries')
      .values(
        entries.map(([account, amount]) => ({
          movement_id: inserted.id,
          wallet_id: wallet.id,
          account,
          amount: Number(amount),
          created_at: movement.now,
        })),
      )
      .execute();
  }
  const delta = (bucket: (typeof BUCKETS)[number]) => movement.entries[bucket] ?? 0n;
  if (BUCKETS.some((bucket) => delta(bucket) !== 0n)) {
    // Relative updates: the CHECK constraints refuse any result below zero or an uncovered hold.
    await trx
      .updateTable('wallets')
      .set({
        balance: sql`balance + ${Number(delta('balance'))}`,
        reserve: sql`reserve + ${Number(delta('reserve'))}`,
        held: sql`held + ${Number(delta('held'))}`,
        updated_at: movement.now,
      })
      .where('id', '=', wallet.id)
      .execute();
    wallet.balance += delta('balance');
    wallet.reserve += delta('reserve');
    wallet.held += delta('held');
  }
  return inserted.id;
}
