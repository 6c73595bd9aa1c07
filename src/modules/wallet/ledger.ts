// The ledger core: lock a wallet, post a movement (entries summing to zero) and apply its bucket
// deltas to the wallet row in the same transaction. Every money change of the wallet goes through here.
import { sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import { deferWrite } from '../../db/write-behind.ts';
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
  const entries = balancedEntries(movement);
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
  await postEntries(trx, wallet.id, inserted.id, entries, movement.now);
  wallet.balance += movement.entries.balance ?? 0n;
  wallet.reserve += movement.entries.reserve ?? 0n;
  wallet.held += movement.entries.held ?? 0n;
  return inserted.id;
}

/** Checks that a movement's entries sum to zero; returns the non-zero ones. */
function balancedEntries(movement: Pick<NewMovement, 'kind' | 'entries'>): [LedgerAccount, bigint][] {
  const entries = Object.entries(movement.entries).filter(([, amount]) => amount !== 0n) as [
    LedgerAccount,
    bigint,
  ][];
  const sum = entries.reduce((total, [, amount]) => total + amount, 0n);
  if (sum !== 0n) throw new UnbalancedMovementError(`${movement.kind} entries sum to ${sum}, not 0`);
  return entries;
}

/**
 * Writes a posted movement's (balanced) entries and applies their bucket deltas to the wallet row, that
 * update last: it takes the wallet's row lock on PostgreSQL if the caller had not, and holds it to the
 * commit. Nothing is read back: both go with the transaction's next statement (write-behind.ts), and a
 * bucket the CHECK constraints refuse fails the transaction there.
 */
async function postEntries(
  trx: Executor,
  walletId: number,
  movementId: number,
  entries: [LedgerAccount, bigint][],
  now: string,
): Promise<void> {
  if (entries.length === 0) return;
  await deferWrite(
    trx,
    trx.insertInto('wallet_entries').values(
      entries.map(([account, amount]) => ({
        movement_id: movementId,
        wallet_id: walletId,
        account,
        amount: Number(amount),
        created_at: now,
      })),
    ),
  );
  const delta = (bucket: (typeof BUCKETS)[number]) =>
    entries.find(([account]) => account === bucket)?.[1] ?? 0n;
  if (BUCKETS.some((bucket) => delta(bucket) !== 0n)) {
    // Relative updates: the CHECK constraints refuse any result below zero or an uncovered hold.
    await deferWrite(
      trx,
      trx
        .updateTable('wallets')
        .set({
          balance: sql`balance + ${Number(delta('balance'))}`,
          reserve: sql`reserve + ${Number(delta('reserve'))}`,
          held: sql`held + ${Number(delta('held'))}`,
          updated_at: now,
        })
        .where('id', '=', walletId),
    );
  }
}

/** A credit's movement, posted without locking the wallet first (postCreditMovement). */
export interface PostedCredit {
  walletId: number;
  movementId: number;
  kind: MovementKind;
  terms: ReserveTerms;
}

/**
 * Posts the movement of a credit (a settlement), for which nothing needs the wallet's buckets first: no
 * lock before it. One statement inserts the movement on the organization's wallet and reads the
 * wallet's id and the organization's reserve terms, from which the caller makes the entries; it writes
 * its own rows that need the terms, then creditWallet, so that PostgreSQL holds the wallet's row lock,
 * which every payment of the organization waits for, from there to the commit only. Null (nothing
 * changed) when this kind of movement was already posted for the reference. A wallet not made yet is
 * made (and locked) first.
 */
export async function postCreditMovement(
  trx: Executor,
  organizationId: number,
  environment: Environment,
  movement: Omit<NewMovement, 'entries'>,
): Promise<PostedCredit | null> {
  let inserted = await insertCredit(trx, organizationId, environment, movement);
  if (inserted === undefined) {
    // No row: the wallet does not exist yet, or the movement was posted before. Made if missing, then
    // tried once more (a movement posted before still inserts nothing).
    await lockWallet(trx, organizationId, environment, movement.now);
    inserted = await insertCredit(trx, organizationId, environment, movement);
    if (inserted === undefined) return null;
  }
  if (inserted.rolling_reserve_bp === null || inserted.rolling_reserve_days === null)
    throw new Error(`Organization ${organizationId} does not exist.`);
  return {
    walletId: inserted.wallet_id,
    movementId: inserted.id,
    kind: movement.kind,
    terms: {
      reserveBp: Number(inserted.rolling_reserve_bp),
      reserveDays: Number(inserted.rolling_reserve_days),
    },
  };
}

/** The entries of a credit posted by postCreditMovement, and the wallet's update: last in the transaction. */
export function creditWallet(
  trx: Executor,
  posted: PostedCredit,
  entries: NewMovement['entries'],
  now: string,
): Promise<void> {
  const balanced = balancedEntries({ kind: posted.kind, entries });
  return postEntries(trx, posted.walletId, posted.movementId, balanced, now);
}

function insertCredit(
  trx: Executor,
  organizationId: number,
  environment: Environment,
  movement: Omit<NewMovement, 'entries'>,
) {
  const organization = (column: 'rolling_reserve_bp' | 'rolling_reserve_days') =>
    trx.selectFrom('organizations').select(column).where('organizations.id', '=', organizationId).as(column);
  return trx
    .insertInto('wallet_movements')
    .columns(['wallet_id', 'kind', 'reference_id', 'reference_public_id', 'amount', 'created_at'])
    .expression(
      trx
        .selectFrom('wallets')
        .select([
          'wallets.id',
          sql<string>`cast(${movement.kind} as text)`.as('kind'),
          sql<number>`cast(${movement.referenceId} as bigint)`.as('reference_id'),
          sql<string>`cast(${movement.referencePublicId} as text)`.as('reference_public_id'),
          sql<number>`cast(${Number(movement.amount)} as bigint)`.as('amount'),
          sql<string>`cast(${movement.now} as text)`.as('created_at'),
        ])
        .where('wallets.organization_id', '=', organizationId)
        .where('wallets.environment', '=', environment),
    )
    .onConflict((oc) => oc.columns(['kind', 'reference_id']).doNothing())
    .returning(['id', 'wallet_id', organization('rolling_reserve_bp'), organization('rolling_reserve_days')])
    .executeTakeFirst();
}
