// Writes attempt outcomes in batches: the attempts log, and each delivery's new state (delivered,
// pending with its next due time, or failed for good). An event's first delivery is inserted here, in
// that state, and its event marked dispatched; a later attempt changes only a row this worker still
// leases.
import type { Kysely } from 'kysely';
import type { Database } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { jsonIds, jsonRows } from '../../db/json-rows.ts';
import type { FirstDelivery } from './worker-store.ts';

/** What happened to one attempt, and what the delivery becomes. */
export interface AttemptRecord {
  /** The delivery's row; null for an event's first delivery, whose row this record makes. */
  deliveryRowId: number | null;
  deliveryId: string;
  eventType: string;
  first: FirstDelivery | null;
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

/** The columns of an attempt, in the order the JSON rows carry them (jsonRows). */
const ATTEMPT_COLUMNS = {
  delivery_id: 'bigint',
  attempt: 'integer',
  attempted_at: 'text',
  url: 'text',
  response_status: 'integer',
  duration_ms: 'integer',
  error: 'text',
  response_body: 'text',
} as const;

/** The columns of an event's first delivery, in the order the JSON rows carry them (jsonRows). */
const FIRST_DELIVERY_COLUMNS = {
  delivery_id: 'text',
  organization_id: 'bigint',
  event_id: 'bigint',
  event_type: 'text',
  environment: 'text',
  subject: 'text',
  status: 'text',
  attempt_count: 'integer',
  next_attempt_at: 'text',
  last_response_status: 'integer',
  last_error: 'text',
  created_at: 'text',
  updated_at: 'text',
  delivered_at: 'text',
} as const;

/**
 * Writes a batch of outcomes in one transaction. Each batch statement takes its rows as one JSON
 * parameter (json-rows.ts): the same SQL for every batch size. The events' first deliveries go in by a
 * plain insert: should another worker have written one of them first (a lease that lapsed mid-send, the
 * event sent twice), the unique index refuses it, the transaction rolls back, and the batch is written
 * again with the insert that keeps the other worker's row. An `ON CONFLICT` at every flush would check
 * each row against the table's three unique indexes before inserting it, for a conflict that a crash
 * alone makes (PostgreSQL: about a third more per row).
 */
export async function recordAttempts(
  db: Kysely<Database>,
  workerId: string,
  records: AttemptRecord[],
  now: string,
) {
  try {
    await writeOutcomes(db, workerId, records, now, false);
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    await writeOutcomes(db, workerId, records, now, true);
  }
}

async function writeOutcomes(
  db: Kysely<Database>,
  workerId: string,
  records: AttemptRecord[],
  now: string,
  conflicts: boolean,
) {
  await db.transaction().execute(async (trx) => {
    const rowIds = await insertFirstDeliveries(trx, records, now, conflicts);
    await trx
      .insertInto('webhook_attempts')
      .columns(Object.keys(ATTEMPT_COLUMNS) as (keyof typeof ATTEMPT_COLUMNS)[])
      .expression(
        jsonRows(
          trx,
          records.map((record) => ({
            delivery_id: record.deliveryRowId ?? (rowIds.get(record.first?.eventId ?? -1) as number),
            attempt: record.attempt,
            attempted_at: record.attemptedAt,
            url: record.url,
            response_status: record.responseStatus,
            duration_ms: record.durationMs,
            error: record.error,
            response_body: record.responseBody,
          })),
          ATTEMPT_COLUMNS,
        ),
      )
      .execute();
    // Successes are the bulk: one statement per (attempt number, response status) group.
    const groups = new Map<string, AttemptRecord[]>();
    for (const record of records) {
      if (record.deliveryRowId === null || record.outcome.status !== 'delivered') continue;
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
          jsonIds(
            trx,
            group.map((record) => record.deliveryRowId as number),
          ),
        )
        .where('locked_by', '=', workerId)
        .execute();
    }
    for (const record of records) {
      if (record.deliveryRowId === null || record.outcome.status === 'delivered') continue;
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

/**
 * Inserts the first deliveries of a batch in their final state and marks their events dispatched;
 * returns each event's delivery row id. With `conflicts`, an event whose lease lapsed mid-send and
 * that another worker sent again and wrote first keeps that row, and this attempt is logged on it;
 * without, such a row makes the insert fail (recordAttempts then writes the batch again with it).
 */
async function insertFirstDeliveries(
  trx: Kysely<Database>,
  records: AttemptRecord[],
  now: string,
  conflicts: boolean,
): Promise<Map<number, number>> {
  // In event order, as every flush inserts them: two flushes that hold the same events (a lapsed lease
  // sent twice) take the rows' locks in the same order, not in opposite ones.
  const firsts = records
    .filter((record) => record.first !== null)
    .sort((a, b) => (a.first as FirstDelivery).eventId - (b.first as FirstDelivery).eventId);
  const rowIds = new Map<number, number>();
  if (firsts.length === 0) return rowIds;
  let insert = trx
    .insertInto('webhook_deliveries')
    .columns(Object.keys(FIRST_DELIVERY_COLUMNS) as (keyof typeof FIRST_DELIVERY_COLUMNS)[])
    .expression(
      jsonRows(
        trx,
        firsts.map((record) => {
          const first = record.first as FirstDelivery;
          const outcome = record.outcome;
          return {
            delivery_id: record.deliveryId,
            organization_id: first.organizationId,
            event_id: first.eventId,
            event_type: record.eventType,
            environment: first.environment,
            subject: first.subject,
            status: outcome.status,
            attempt_count: record.attempt,
            next_attempt_at: outcome.status === 'pending' ? outcome.nextAttemptAt : record.attemptedAt,
            last_response_status: record.responseStatus,
            last_error: outcome.status === 'delivered' ? null : record.error,
            created_at: record.attemptedAt,
            updated_at: now,
            delivered_at: outcome.status === 'delivered' ? now : null,
          };
        }),
        FIRST_DELIVERY_COLUMNS,
      ),
    )
    .returning(['id', 'event_id']);
  // Any conflict, on the one automatic delivery of the event or on its webhook id (the same for both
  // senders), means another worker wrote this event's row first.
  if (conflicts) insert = insert.onConflict((conflict) => conflict.doNothing());
  const inserted = await insert.execute();
  for (const row of inserted) rowIds.set(row.event_id, row.id);
  const eventIds = firsts.map((record) => (record.first as FirstDelivery).eventId);
  const taken = eventIds.filter((eventId) => !rowIds.has(eventId));
  if (taken.length > 0) {
    const existing = await trx
      .selectFrom('webhook_deliveries')
      .select(['id', 'event_id'])
      .where('event_id', 'in', taken)
      .where('redelivery_of', 'is', null)
      .execute();
    for (const row of existing) rowIds.set(row.event_id, row.id);
  }
  await trx
    .updateTable('events')
    .set({ dispatched_at: now, locked_by: null, locked_until: null })
    .where('id', 'in', jsonIds(trx, eventIds))
    .execute();
  return rowIds;
}
