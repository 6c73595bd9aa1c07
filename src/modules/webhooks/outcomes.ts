// Writes attempt outcomes in batches: the attempts log, and each delivery's new state (delivered,
// pending with its next due time, or failed for good). An event's first delivery is inserted here, in
// that state (its claim marked the event dispatched), and the claims' leases whose deliveries are all
// written are deleted; a later attempt changes only a row this worker still leases. On PostgreSQL a batch is one statement (data-modifying WITH); on SQLite, one transaction.
import { type Expression, type Kysely, sql } from 'kysely';
import { isPostgres } from '../../db/connection.ts';
import type { Database } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { jsonIds, jsonParameter, jsonRows, jsonTable } from '../../db/json-rows.ts';
import { prepareQuery } from '../../db/prepared.ts';
import { committedLazily, type FirstDelivery } from './worker-store.ts';

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
 * Writes a batch of outcomes, and deletes the `webhook_leases` rows of `leases` (claims whose first
 * deliveries are all in this batch or written before it): on PostgreSQL in one statement
 * (flushOutcomes), on SQLite in one transaction. Each batch statement takes its rows as one JSON parameter (json-rows.ts): the same SQL
 * for every batch size. The events' first deliveries go in by a plain insert: should another worker
 * have written one of them first (a lease that lapsed mid-send, the event sent twice), the unique index
 * refuses it, nothing of the batch is written, and the batch is written again, in a transaction, with
 * the insert that keeps the other worker's row. An `ON CONFLICT` at every flush would check each row
 * against the table's three unique indexes before inserting it, for a conflict that a crash alone makes
 * (PostgreSQL: about a third more per row).
 */
export async function recordAttempts(
  db: Kysely<Database>,
  workerId: string,
  records: AttemptRecord[],
  now: string,
  leases: number[] = [],
) {
  try {
    if (isPostgres(db)) {
      const statement = records.some((record) => record.deliveryRowId !== null) ? 'retries' : 'firsts';
      await flushOutcomes[statement].all(db, workerId, now, outcomeRows(records), JSON.stringify(leases));
    } else await writeOutcomes(db, workerId, records, now, leases, false);
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
    await writeOutcomes(db, workerId, records, now, leases, true);
  }
}

/**
 * The records whose outcome a delivery row takes, by row (an event's first deliveries excepted: their
 * rows are inserted with it). A row attempted twice in one batch (a lease that lapsed before its outcome
 * was written, and the delivery sent again) takes its first success in the batch, else its first
 * outcome: a later answer never undoes a delivery. Both attempts are logged all the same.
 */
function rowOutcomes(records: AttemptRecord[]): Map<number, AttemptRecord> {
  const byRow = new Map<number, AttemptRecord>();
  for (const record of records) {
    if (record.deliveryRowId === null) continue;
    const taken = byRow.get(record.deliveryRowId);
    if (
      taken === undefined ||
      (taken.outcome.status !== 'delivered' && record.outcome.status === 'delivered')
    )
      byRow.set(record.deliveryRowId, record);
  }
  return byRow;
}

/**
 * Each record of a PostgreSQL flush, in the order the JSON rows carry its values (jsonRows): what its
 * attempt is logged with (`delivery_id`, its delivery row: null for an event's first delivery), the row
 * its outcome updates (`update_row`: rowOutcomes), and what an event's first delivery row is made of.
 */
const OUTCOME_COLUMNS = {
  position: 'integer',
  update_row: 'bigint',
  event_id: 'bigint',
  webhook_id: 'text',
  organization_id: 'bigint',
  environment: 'text',
  subject: 'text',
  event_type: 'text',
  status: 'text',
  next_attempt_at: 'text',
  ...ATTEMPT_COLUMNS,
} as const;
type OutcomeRow = { [Column in keyof typeof OUTCOME_COLUMNS]: string | number | null };

/**
 * The whole flush on PostgreSQL as one statement, atomic on its own (no BEGIN and COMMIT), prepared (its
 * SQL built once, and named: built at each flush, the WITH cost more CPU than the flush's JSON): the
 * JSON rows (outcomeRows) read once (`outcome`, materialized: it is read four times), then
 * - `first_delivery`: the events' first deliveries inserted, in event order (as the transaction of
 *   writeOutcomes inserts them: two flushes that hold the same events take the unique index's entries
 *   in the same order);
 * - `released`: the claims' leases deleted whose deliveries are all written by now (their events were
 *   marked dispatched by the claim itself: dispatchEvents);
 * - `retried`: the later attempts' rows updated, each by one record at most (rowOutcomes), and only
 *   while this worker holds their lease. Only in the statement for batches that have such attempts: a
 *   batch of first deliveries alone (a backlog's, most batches) goes by a statement without it;
 * - the attempts inserted, in the batch's order, on the rows just inserted or updated.
 * Both updates find their rows by primary key (byIndex), never by a join the planner may make a scan.
 * No row is written by two parts (PostgreSQL would apply only one of them, silently): the insert
 * writes new rows, `retried` rows that exist, `released` leases, and the attempts are another table.
 */
const flushStatement = (retries: boolean) =>
  prepareQuery(4, (db, workerId: string, now: string, outcomes: string, leases: string) => {
    const delivered = sql<boolean>`outcome.status = 'delivered'`;
    const lastError = sql<string | null>`case when ${delivered} then null else outcome.error end`;
    const firsts = db
      .with('outcome', () => sql<OutcomeRow>`(${jsonTable(db, outcomes, OUTCOME_COLUMNS)})`)
      .with('first_delivery', (qc) =>
        qc
          .insertInto('webhook_deliveries')
          .columns(Object.keys(FIRST_DELIVERY_COLUMNS) as (keyof typeof FIRST_DELIVERY_COLUMNS)[])
          .expression((eb) =>
            eb
              .selectFrom('outcome')
              .select([
                'outcome.webhook_id',
                'outcome.organization_id',
                'outcome.event_id',
                'outcome.event_type',
                'outcome.environment',
                'outcome.subject',
                'outcome.status',
                'outcome.attempt',
                sql<string>`coalesce(outcome.next_attempt_at, outcome.attempted_at)`.as('next_attempt_at'),
                'outcome.response_status',
                lastError.as('last_error'),
                'outcome.attempted_at',
                sql<string>`${now}`.as('updated_at'),
                sql<string | null>`case when ${delivered} then ${now} end`.as('delivered_at'),
              ])
              .where('outcome.event_id', 'is not', null)
              .orderBy('outcome.event_id'),
          )
          .returning(['id', 'event_id']),
      )
      .with('released', (qc) =>
        qc
          .deleteFrom('webhook_leases')
          .where(
            'id',
            '=',
            byIndex(sql`select value::bigint from json_array_elements_text(${leases}::json)`),
          ),
      );
    // A batch of first deliveries only (a backlog's, most batches) has no `retried` to plan or run.
    const written = !retries
      ? firsts
      : (firsts.with('retried', (qc) =>
          qc
            .updateTable('webhook_deliveries')
            .from('outcome')
            .set({
              status: sql`outcome.status`,
              attempt_count: sql`outcome.attempt`,
              next_attempt_at: sql`coalesce(outcome.next_attempt_at, webhook_deliveries.next_attempt_at)`,
              last_response_status: sql`outcome.response_status`,
              last_error: lastError,
              locked_by: null,
              locked_until: null,
              delivered_at: sql`case when ${delivered} then ${now} else webhook_deliveries.delivered_at end`,
              updated_at: now,
            })
            .where(
              'webhook_deliveries.id',
              '=',
              byIndex(
                qc
                  .selectFrom('outcome')
                  .select('outcome.update_row')
                  .where('outcome.update_row', 'is not', null),
              ),
            )
            .whereRef('webhook_deliveries.id', '=', 'outcome.update_row')
            .where('webhook_deliveries.locked_by', '=', workerId),
        ) as unknown as typeof firsts);
    return written
      .insertInto('webhook_attempts')
      .columns(Object.keys(ATTEMPT_COLUMNS) as (keyof typeof ATTEMPT_COLUMNS)[])
      .expression((eb) =>
        eb
          .selectFrom('outcome')
          .leftJoin('first_delivery', 'first_delivery.event_id', 'outcome.event_id')
          .select([
            sql<number>`coalesce(outcome.delivery_id, first_delivery.id)`.as('delivery_id'),
            'outcome.attempt',
            'outcome.attempted_at',
            'outcome.url',
            'outcome.response_status',
            'outcome.duration_ms',
            'outcome.error',
            'outcome.response_body',
          ])
          .where(committedLazily(db))
          .orderBy('outcome.position'),
      );
  });
const flushOutcomes = { firsts: flushStatement(false), retries: flushStatement(true) };

/**
 * `= any(array(<ids>))`: the rows of a subquery's ids, found by the primary key whatever the planner
 * knows of the table. As a join (`in (select …)`, `from … where id = …`) the planner's estimate of the
 * batch (100 rows) against a table of some thousands made a hash join of a sequential scan: every
 * flush read the whole events table, and the whole deliveries table for the retries (none, mostly), a
 * cost that grew with the tables (auto_explain, 2026-11-28: 1.1 ms of a 2.7 ms flush with 3,000 events).
 * An array is one value: the scan is by index, one probe per id, and none when the array is empty.
 */
function byIndex(ids: Expression<unknown>) {
  return sql<number>`any(array(${ids}))`;
}

/** A batch's records as flushOutcomes' JSON parameter (OUTCOME_COLUMNS), in the batch's order. */
function outcomeRows(records: AttemptRecord[]): string {
  const updates = rowOutcomes(records);
  const rows = records.map((record, position): OutcomeRow => {
    const first = record.first;
    return {
      position,
      update_row:
        record.deliveryRowId !== null && updates.get(record.deliveryRowId) === record
          ? record.deliveryRowId
          : null,
      event_id: first?.eventId ?? null,
      webhook_id: record.deliveryId,
      organization_id: first?.organizationId ?? null,
      environment: first?.environment ?? null,
      subject: first?.subject ?? null,
      event_type: record.eventType,
      status: record.outcome.status,
      next_attempt_at: record.outcome.status === 'pending' ? record.outcome.nextAttemptAt : null,
      ...attemptColumns(record, record.deliveryRowId),
    };
  });
  return jsonParameter(rows, OUTCOME_COLUMNS);
}

/** An attempt's columns (ATTEMPT_COLUMNS), logged on `deliveryId`. */
function attemptColumns(record: AttemptRecord, deliveryId: number | null) {
  return {
    delivery_id: deliveryId,
    attempt: record.attempt,
    attempted_at: record.attemptedAt,
    url: record.url,
    response_status: record.responseStatus,
    duration_ms: record.durationMs,
    error: record.error,
    response_body: record.responseBody,
  };
}

async function writeOutcomes(
  db: Kysely<Database>,
  workerId: string,
  records: AttemptRecord[],
  now: string,
  leases: number[],
  conflicts: boolean,
) {
  await db.transaction().execute(async (trx) => {
    const rowIds = await insertFirstDeliveries(trx, records, now, conflicts);
    if (leases.length > 0)
      await trx.deleteFrom('webhook_leases').where('id', 'in', jsonIds(trx, leases)).execute();
    await trx
      .insertInto('webhook_attempts')
      .columns(Object.keys(ATTEMPT_COLUMNS) as (keyof typeof ATTEMPT_COLUMNS)[])
      .expression(
        jsonRows(
          trx,
          records.map((record) =>
            attemptColumns(
              record,
              record.deliveryRowId ?? (rowIds.get(record.first?.eventId ?? -1) as number),
            ),
          ),
          ATTEMPT_COLUMNS,
        ),
      )
      .execute();
    // Successes are the bulk: one statement per (attempt number, response status) group.
    const updates = [...rowOutcomes(records).values()];
    const groups = new Map<string, AttemptRecord[]>();
    for (const record of updates) {
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
          jsonIds(
            trx,
            group.map((record) => record.deliveryRowId as number),
          ),
        )
        .where('locked_by', '=', workerId)
        .execute();
    }
    for (const record of updates) {
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
        .where('id', '=', record.deliveryRowId as number)
        .where('locked_by', '=', workerId)
        .execute();
    }
  });
}

/**
 * Inserts the first deliveries of a batch in their final state (their events were marked dispatched by
 * their claim); returns each event's delivery row id. With `conflicts`, an event whose lease lapsed mid-send and
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
  return rowIds;
}
