// Writes attempt outcomes in batches: the attempts log, and each delivery's new state (delivered,
// pending with its next due time, or failed for good). Only rows this worker still leases change.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';

/** What happened to one attempt, and what the delivery becomes. */
export interface AttemptRecord {
  deliveryRowId: number;
  attempt: number;
  attemptedAt: string;
  url: string;
  responseStatus: number | null;
  durationMs: number;
  error: string | null;
  responseBody: string | null;
  /** delivered, pending with the next due time, or failed for good. */
  outcome: { status: 'delivered' } | { status: 'pending'; nextAttemptAt: string } | { status: 'failed' };
}

/** Writes a batch of outcomes in one transaction. */
export async function recordAttempts(
  db: Kysely<Database>,
  workerId: string,
  records: AttemptRecord[],
  now: string,
) {
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto('webhook_attempts')
      .values(
        records.map((record) => ({
          delivery_id: record.deliveryRowId,
          attempt: record.attempt,
          attempted_at: record.attemptedAt,
          url: record.url,
          response_status: record.responseStatus,
          duration_ms: record.durationMs,
          error: record.error,
          response_body: record.responseBody,
        })),
      )
      .execute();
    // Successes are the bulk: one statement per (attempt number, response status) group.
    const groups = new Map<string, AttemptRecord[]>();
    for (const record of records) {
      if (record.outcome.status !== 'delivered') continue;
      const key = `${record.attempt}:${record.responseStatus}`;
      groups.set(key, [...(groups.get(key) ?? []), record]);
    }
    for (const group of groups.values()) {
      await trx
        .updateTable('webhook_deliveries')
        .set({
          status: 'delivered',
          attempt_count: group[0].attempt,
          last_response_status: group[0].responseStatus,
          last_error: null,
          locked_by: null,
          locked_until: null,
          delivered_at: now,
          updated_at: now,
        })
        .where(
          'id',
          'in',
          group.map((record) => record.deliveryRowId),
        )
        .where('locked_by', '=', workerId)
        .execute();
    }
    for (const record of records) {
      if (record.outcome.status === 'delivered') continue;
      await trx
        .updateTable('webhook_deliveries')
        .set({
          status: record.outcome.status,
          attempt_count: record.attempt,
          ...(record.outcome.status === 'pending' ? { next_attempt_at: record.outcome.nextAttemptAt } : {}),
          last_response_status: record.responseStatus,
          last_error: record.error,
          locked_by: null,
          locked_until: null,
          updated_at: now,
        })
        .where('id', '=', record.deliveryRowId)
        .where('locked_by', '=', workerId)
        .execute();
    }
  });
}
