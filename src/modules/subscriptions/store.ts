// Queries of the subscriptions module that the renewal worker builds on: making a period's cycle
// (exactly one per period: the unique index decides between two makers) and claiming due cycles under
// a lease (FOR UPDATE SKIP LOCKED on PostgreSQL; SQLite has one writer), as webhooks/worker-store.ts
// claims deliveries.
import type { Insertable } from 'kysely';
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import type { SubscriptionCycleRow, SubscriptionCyclesTable } from './table.ts';

export interface CycleLease {
  workerId: string;
  /** ISO times: the claim's now on the subscriptions' clock (what is due), real now (which leases ran out), and until when the lease holds. */
  now: string;
  leaseNow: string;
  until: string;
}

/**
 * Inserts the cycle of a (subscription, period), or returns null when that period already has one
 * (another worker made it first: the unique index refused this insert).
 */
export async function createCycle(
  db: Executor,
  values: Insertable<SubscriptionCyclesTable>,
): Promise<SubscriptionCycleRow | null> {
  try {
    return await db.insertInto('subscription_cycles').values(values).returningAll().executeTakeFirstOrThrow();
  } catch (error) {
    if (isUniqueViolation(error)) return null;
    throw error;
  }
}

/**
 * Leases up to `limit` cycles whose try (or give-up time) is due and that no live lease holds. Two
 * claimers never get the same cycle: PostgreSQL skips rows another claimer has locked and re-checks the
 * lease on the row it updates; SQLite runs one write at a time.
 */
export async function claimDueCycles(
  db: Executor,
  lease: CycleLease,
  limit: number,
  /** One test-clock subscription's cycles; null: every real-time subscription's. */
  subscriptionId: number | null = null,
): Promise<SubscriptionCycleRow[]> {
  const clocked = db.selectFrom('subscriptions').select('id');
  let due = db
    .selectFrom('subscription_cycles')
    .select('id')
    .where('status', 'in', ['processing', 'retrying'])
    .where('next_attempt_at', '<=', lease.now)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', lease.leaseNow)]))
    .where(
      'subscription_id',
      'in',
      subscriptionId === null
        ? clocked.where('test_clock_at', 'is', null)
        : clocked.where('id', '=', subscriptionId),
    )
    .orderBy('next_attempt_at')
    .limit(limit);
  if (isPostgres(db)) due = due.forUpdate().skipLocked();
  return db
    .updateTable('subscription_cycles')
    .set({ leased_by: lease.workerId, lease_until: lease.until, updated_at: lease.now })
    .where('id', 'in', due)
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', lease.leaseNow)]))
    .returningAll()
    .execute();
}
