// The worker's queries: turn undispatched outbox events into deliveries, claim due deliveries under a
// lease (FOR UPDATE SKIP LOCKED on PostgreSQL; SQLite has one writer), and record attempt outcomes.
import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import { isPostgres } from '../../db/connection.ts';
import type { Database, Executor } from '../../db/database.ts';
import { jsonIds } from '../../db/json-rows.ts';
import { prepareQuery } from '../../db/prepared.ts';
import type { Environment } from '../api-keys/table.ts';
import type { EventRow } from '../events/table.ts';

/**
 * A delivery this worker holds the lease of, with everything needed to send it. An event's first
 * delivery has no row yet (`id` null): the lease is its claim's `webhook_leases` row (`leaseId`), and
 * the delivery row is written after the send with its outcome (`first` has what it needs).
 */
export interface ClaimedDelivery {
  id: number | null;
  deliveryId: string;
  attemptCount: number;
  eventType: string;
  payload: string;
  url: string | null;
  secretEncrypted: string | null;
  /** The previous secret while the overlap its rotation asked for lasts (at the claim); else null. */
  previousSecretEncrypted: string | null;
  first: FirstDelivery | null;
  /**
   * The `webhook_leases` row of the claim that took an event's first delivery (null for a retry, whose
   * lease is on its delivery row): the flush that writes the last of the claim's deliveries deletes it.
   */
  leaseId: number | null;
}

/** What an event's first delivery row is made of, besides its outcome. */
export interface FirstDelivery {
  eventId: number;
  organizationId: number;
  environment: Environment;
  subject: string | null;
}

export interface Lease {
  workerId: string;
  now: string;
  until: string;
}

/**
 * A condition, always true, that makes the statement's own transaction commit without waiting for its
 * write-ahead log to reach the disk (`synchronous_commit` off for that transaction only, set by the
 * statement itself: the worker's claims and flushes are single statements, no BEGIN to put a SET LOCAL
 * in). For the worker's bookkeeping only, never for the API's: a crash of PostgreSQL itself may lose the
 * last such commits, a fraction of a second of them (never a part of one, and never one that a later
 * synchronous commit, an API's, has followed), and each loss only sends a webhook again. A lost lease
 * makes the event claimable again, a lost outcome leaves the lease to lapse, and the delivery is sent
 * again under the same webhook id, which receivers deduplicate by: the at-least-once the worker promises
 * anyway (a worker that dies mid-send does the same). Measured with pgbench on this machine: an
 * autocommitted insert's round trip 0.13-0.19 ms with the wait, 0.07 ms without. An uncorrelated
 * subquery, so PostgreSQL runs it once per statement (an InitPlan), not once per row.
 */
export function committedLazily(db: Executor) {
  return isPostgres(db)
    ? sql<boolean>`(select set_config('synchronous_commit', 'off', true)) is not null`
    : sql<boolean>`true`;
}

/** A pending delivery no worker holds at `now`: never leased, or its lease lapsed. */
const leaseLapsed = (now: string) => sql<boolean>`(locked_until is null or locked_until <= ${now})`;

/** Outbox events no worker leased: exactly the rows of the `events_claimable` partial index. */
function unleasedEvents(db: Executor) {
  return db.selectFrom('events').where('dispatched_at', 'is', null).where('locked_until', 'is', null);
}

/**
 * The ids of up to `limit` outbox events a claim at `now` may take, in three parts read in turn, each
 * only while the ones before it gave fewer than `limit`:
 * 1. unleased events in a window of ids: from the lowest unleased one (the first entry of the
 *    `events_claimable` partial index, read by `min()`, which PostgreSQL always plans as one index
 *    probe) to `limit` × 2 + 64 past it, in id order. Whatever plan the planner picks for it (a table
 *    it has no statistics of, a fresh install or autovacuum off, once made it a bitmap scan and a sort
 *    of every undispatched event), it reads that window, not the backlog;
 * 2. unleased events past that window, up to `limit` × 32 + 1,024 past the lowest, in id order: only
 *    when claims running at the same moment hold the first window's rows (each skips the rows another
 *    locks), so that a claim does not come back empty while unleased events wait (it would take some
 *    thirty claims at once). Bounded like the first, for the same reason;
 * 3. events whose lease lapsed (a worker that died or stalled mid-send), earliest lapsed first, from
 *    the small `events_leased` partial index.
 * `events_claimable` holds exactly the undispatched events no worker leased, so no part filters leased
 * rows out one by one. It does keep an entry for every event leased or dispatched until `VACUUM`
 * removes it (a dead row's entry; without autovacuum, never), and `min()` steps over those at the
 * head of the index: 2,800 pages after 30,000 events, 14 ms the first time, 120 pages and 0.3 ms once
 * they are marked dead, at every claim. With `from`, the claim's `min()` starts there instead: the
 * worker passes the lowest event its last claim took (DeliveryWorker.claimFrom), below which it found
 * nothing claimable, and reads from the start again every second. With `lock` (the claim itself, on
 * PostgreSQL) each row is locked as it is read, and rows another claim holds are skipped; a read that
 * only asks whether there is work locks nothing.
 */
function claimableEventIds(
  db: Executor,
  now: string,
  limit: number,
  lock = false,
  windows: { first: number; second: number } = claimWindows(limit),
  from: number | null = null,
) {
  // The lowest unleased event, read from `from` on when the caller knows none below it is claimable.
  const lowest = () => {
    const query = unleasedEvents(db).select((eb) => eb.fn.min('id').as('lowest'));
    return from === null ? query : query.where('id', '>=', from);
  };
  const unleased = () =>
    unleasedEvents(db)
      .innerJoin(lowest().as('first_unleased'), (join) => join.onTrue())
      .select('events.id')
      .orderBy('events.id')
      .limit(limit);
  const past = (
    eb: ExpressionBuilder<Database & { first_unleased: { lowest: number } }, 'first_unleased'>,
    ids: number,
  ) => eb('first_unleased.lowest', '+', ids);
  let inWindow = unleased()
    .where((eb) => eb('events.id', '>=', eb.ref('first_unleased.lowest')))
    .where((eb) => eb('events.id', '<', past(eb, windows.first)));
  let pastWindow = unleased()
    .where((eb) => eb('events.id', '>=', past(eb, windows.first)))
    .where((eb) => eb('events.id', '<', past(eb, windows.second)));
  let lapsed = db
    .selectFrom('events')
    .select('id')
    .where('dispatched_at', 'is', null)
    .where('locked_until', 'is not', null)
    .where('locked_until', '<=', now)
    .orderBy('locked_until')
    .limit(limit);
  if (lock && isPostgres(db)) {
    inWindow = inWindow.forUpdate('events').skipLocked();
    pastWindow = pastWindow.forUpdate('events').skipLocked();
    lapsed = lapsed.forUpdate().skipLocked();
  }
  return db
    .selectFrom(inWindow.as('in_window'))
    .select('in_window.id')
    .unionAll(db.selectFrom(pastWindow.as('past_window')).select('past_window.id'))
    .unionAll(db.selectFrom(lapsed.as('lapsed')).select('lapsed.id'))
    .limit(limit);
}

/** How far past the lowest unleased event the two parts of a claim of `limit` events read (above). */
function claimWindows(limit: number) {
  return { first: limit * 2 + 64, second: limit * 32 + 1024 };
}

/** The pending deliveries a claim at `now` may take, earliest due first (the partial index's order). */
function unleasedPending(db: Executor, now: string) {
  return db
    .selectFrom('webhook_deliveries')
    .where('status', '=', sql.lit('pending'))
    .where(leaseLapsed(now))
    .orderBy('next_attempt_at');
}

/**
 * The idle round's one read: is any outbox event waiting for a claim (undispatched, and not leased to
 * a worker sending it), and when does the earliest unleased pending delivery fall due (null: none).
 * One prepared statement (named on PostgreSQL), so that the safety poll of an idle service is one
 * round trip, parsed and planned once per connection.
 */
const workProbe = prepareQuery(1, (db, now: string) =>
  db.selectNoFrom(() => [
    db
      .selectFrom(claimableEventIds(db, now, 1).as('claimable'))
      .select('claimable.id')
      .as('event_id'),
    unleasedPending(db, now).select('next_attempt_at').limit(1).as('next_attempt_at'),
    lapsedLeases(db, now).select('id').limit(1).as('lapsed_lease'),
  ]),
);

/**
 * claimDueDeliveries' read: when the earliest unleased pending delivery falls due, and whether a
 * claim's lease has lapsed. One prepared statement.
 */
const dueRead = prepareQuery(1, (db, now: string) =>
  db.selectNoFrom(() => [
    unleasedPending(db, now).select('next_attempt_at').limit(1).as('next_attempt_at'),
    lapsedLeases(db, now).select('id').limit(1).as('lapsed_lease'),
  ]),
);

/** Claims' leases that ended at `now` (recoverLapsedLeases), earliest first. */
function lapsedLeases(db: Executor, now: string) {
  return db.selectFrom('webhook_leases').where('locked_until', '<=', now).orderBy('locked_until');
}

export interface WorkProbe {
  /** Some outbox event waits for a claim. */
  events: boolean;
  /** When the earliest unleased pending delivery falls due (null: there is none). */
  nextDueAt: string | null;
  /** A claim's lease lapsed: recoverLapsedLeases has events to make claimable again. */
  lapsed: boolean;
}

export async function probeWork(db: Executor, now: string): Promise<WorkProbe> {
  const row = await workProbe.first(db, now);
  return {
    events: row?.event_id != null,
    nextDueAt: row?.next_attempt_at ?? null,
    lapsed: row?.lapsed_lease != null,
  };
}

/**
 * The claim's one statement on PostgreSQL, prepared (named): a statement of three window reads and two
 * subqueries, parsed and planned at every round it was, and built by Kysely at every round. It marks the
 * events it takes dispatched (`leased`), reads each one's endpoint in its RETURNING, and writes the
 * claim's one `webhook_leases` row naming those that have an endpoint (`lease`, none when none has):
 * one write of each event, where a lease in the event's own columns made two (migration 026).
 */
const leaseEvents = prepareQuery(
  7,
  (
    db,
    workerId: string,
    until: string,
    now: string,
    limit: number,
    first: number,
    second: number,
    from: number,
  ) =>
    db
      .with('leased', () => dispatchClaimable(db, now, limit, first, second, from))
      .with('lease', (qc) =>
        qc
          .insertInto('webhook_leases')
          .columns(['worker_id', 'locked_until', 'event_ids'])
          .expression((eb) =>
            eb
              .selectFrom('leased')
              .select([
                sql<string>`${workerId}`.as('worker_id'),
                sql<string>`${until}`.as('locked_until'),
                sql<string>`json_agg(leased.id order by leased.id)::text`.as('event_ids'),
              ])
              .where('leased.endpoint_url', 'is not', null)
              .where('leased.secret_encrypted', 'is not', null)
              .having(sql<boolean>`count(*) > 0`),
          )
          .returning('id'),
      )
      .selectFrom('leased')
      // Each column by name: a statement that reads `*` is never named (prepared.ts, READS_EVERY_COLUMN).
      .select([
        'leased.id',
        'leased.organization_id',
        'leased.environment',
        'leased.type',
        'leased.subject',
        'leased.payload',
        'leased.created_at',
        'leased.endpoint_url',
        'leased.secret_encrypted',
        'leased.previous_secret_encrypted',
      ])
      .select((eb) => eb.selectFrom('lease').select('lease.id').as('lease_id')),
);

/** The claim's update on SQLite, which has no data-modifying WITH: dispatchEvents writes the lease. */
const dispatchOnSqlite = prepareQuery(
  5,
  (db, now: string, limit: number, first: number, second: number, from: number) =>
    dispatchClaimable(db, now, limit, first, second, from),
);

/**
 * `update events set dispatched_at = now` of up to `limit` claimable events (claimableEventIds, locked
 * as read on PostgreSQL), returning each event with its organization's endpoint as it is now.
 */
function dispatchClaimable(
  db: Executor,
  now: string,
  limit: number,
  first: number,
  second: number,
  from: number,
) {
  const endpointColumn = <C extends 'endpoint_url' | 'secret_encrypted'>(
    eb: ExpressionBuilder<Database, 'events'>,
    column: C,
  ) =>
    eb
      .selectFrom('webhook_endpoints as w')
      .select(`w.${column}` as `w.${C}`)
      .whereRef('w.organization_id', '=', 'events.organization_id')
      .as(column);
  // The previous secret only while its overlap lasts at the claim: one subquery, not two.
  const previousSecret = (eb: ExpressionBuilder<Database, 'events'>) =>
    eb
      .selectFrom('webhook_endpoints as w')
      .select(
        sql<
          string | null
        >`case when w.previous_secret_expires_at > ${now} then w.previous_secret_encrypted end`.as(
          'previous_secret_encrypted',
        ),
      )
      .whereRef('w.organization_id', '=', 'events.organization_id')
      .as('previous_secret_encrypted');
  return db
    .updateTable('events')
    .set({ dispatched_at: now })
    .where('id', 'in', claimableEventIds(db, now, limit, true, { first, second }, from))
    .where(committedLazily(db))
    .returning((eb) => [
      'id',
      'organization_id',
      'environment',
      'type',
      'subject',
      'payload',
      'created_at',
      endpointColumn(eb, 'endpoint_url'),
      endpointColumn(eb, 'secret_encrypted'),
      previousSecret(eb),
    ]);
}

/**
 * Leases up to `limit` outbox events to this worker, so that their first deliveries are sent at once:
 * the events are marked dispatched, and one `webhook_leases` row names those that have an endpoint; the
 * delivery rows are written after the sends, with their outcomes, and the lease row deleted with the
 * last of them (recordAttempts). Events of organizations without an endpoint are dispatched with no
 * delivery: webhooks start with the events after the endpoint is set. `deliveryId` names each event's
 * first delivery, the same at every claim of the event (a lease that lapsed mid-send is sent again under
 * the same webhook id).
 */
export async function dispatchEvents(
  db: Kysely<Database>,
  lease: Lease,
  limit: number,
  deliveryId: (event: { id: number; created_at: string }) => string,
  from = 0,
) {
  const windows = claimWindows(limit);
  let events: ClaimedEvent[];
  let leaseId: number | null;
  if (isPostgres(db)) {
    // One statement, no transaction, one round trip; other claims skip the rows it locks.
    events = await leaseEvents.all(
      db,
      lease.workerId,
      lease.until,
      lease.now,
      limit,
      windows.first,
      windows.second,
      from,
    );
    leaseId = events.find((event) => event.lease_id !== null)?.lease_id ?? null;
  } else {
    // SQLite: the update and the lease's insert in one transaction (a claim must never dispatch events
    // that no lease names: nothing would send them, or find them again).
    ({ events, leaseId } = await db.transaction().execute(async (trx) => {
      const rows = await dispatchOnSqlite.all(trx, lease.now, limit, windows.first, windows.second, from);
      const ids = rows.filter(hasEndpoint).map((row) => row.id);
      if (ids.length === 0) return { events: rows, leaseId: null };
      const inserted = await trx
        .insertInto('webhook_leases')
        .values({
          worker_id: lease.workerId,
          locked_until: lease.until,
          event_ids: JSON.stringify(ids.sort((a, b) => a - b)),
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      return { events: rows, leaseId: inserted.id };
    }));
  }
  events.sort((a, b) => a.id - b.id);
  const claimed: ClaimedDelivery[] = [];
  for (const event of events) {
    if (!hasEndpoint(event)) continue;
    claimed.push({
      id: null,
      deliveryId: deliveryId(event),
      attemptCount: 0,
      eventType: event.type,
      payload: event.payload,
      url: event.endpoint_url,
      secretEncrypted: event.secret_encrypted,
      previousSecretEncrypted: event.previous_secret_encrypted,
      first: {
        eventId: event.id,
        organizationId: event.organization_id,
        environment: event.environment,
        subject: event.subject,
      },
      leaseId,
    });
  }
  return { events: events.length, claimed, lowest: events.length > 0 ? events[0].id : null };
}

/** A claimed event, with its organization's endpoint as the claim read it. */
type ClaimedEvent = Pick<
  EventRow,
  'id' | 'organization_id' | 'environment' | 'type' | 'subject' | 'payload' | 'created_at'
> & {
  endpoint_url: string | null;
  secret_encrypted: string | null;
  previous_secret_encrypted: string | null;
  lease_id?: number | null;
};

function hasEndpoint(
  event: ClaimedEvent,
): event is ClaimedEvent & { endpoint_url: string; secret_encrypted: string } {
  return event.endpoint_url !== null && event.secret_encrypted !== null;
}

/**
 * The leases of claims that lapsed (their worker died, stalled, or let some of their deliveries go
 * unsent), at most `limit` of them, earliest first: each one's events that still have no first
 * delivery are made undispatched again, so that the next claim takes them, and the lease is deleted.
 * The events of a lease whose deliveries were written keep their dispatch. On PostgreSQL one statement,
 * its leases locked as read (another worker recovering at the same moment skips them); on SQLite one
 * transaction. Returns how many events were made claimable again.
 *
 * A worker that stalled past its lease and then writes its outcomes writes them all the same: an event
 * it sent, made claimable again here, is sent again under the same webhook id (receivers deduplicate by
 * it), and whichever flush comes second keeps the first's delivery row (recordAttempts).
 */
export async function recoverLapsedLeases(db: Kysely<Database>, now: string, limit = 64): Promise<number> {
  if (isPostgres(db)) {
    const row = await reopenLapsed.first(db, now, limit);
    return Number(row?.reopened ?? 0);
  }
  return db.transaction().execute(async (trx) => {
    const lapsed = await lapsedLeases(trx, now).select(['id', 'event_ids']).limit(limit).execute();
    if (lapsed.length === 0) return 0;
    const eventIds = lapsed.flatMap((lease) => JSON.parse(lease.event_ids) as number[]);
    const reopened = await trx
      .updateTable('events')
      .set({ dispatched_at: null })
      .where('id', 'in', jsonIds(trx, eventIds))
      .where(noFirstDelivery)
      .executeTakeFirst();
    await trx
      .deleteFrom('webhook_leases')
      .where(
        'id',
        'in',
        lapsed.map((lease) => lease.id),
      )
      .execute();
    return Number(reopened.numUpdatedRows);
  });
}

/** The event of the query has no first delivery row (a redelivery's does not count). */
function noFirstDelivery(eb: ExpressionBuilder<Database, 'events'>) {
  return eb.not(
    eb.exists(
      eb
        .selectFrom('webhook_deliveries as d')
        .select(sql.lit(1).as('one'))
        .whereRef('d.event_id', '=', 'events.id')
        .where('d.redelivery_of', 'is', null),
    ),
  );
}

/** recoverLapsedLeases on PostgreSQL: one statement, prepared. */
const reopenLapsed = prepareQuery(2, (db, now: string, limit: number) =>
  db
    .with('lapsed', () =>
      lapsedLeases(db, now).select(['id', 'event_ids']).limit(limit).forUpdate().skipLocked(),
    )
    .with('released', (qc) =>
      qc.deleteFrom('webhook_leases').where('id', 'in', qc.selectFrom('lapsed').select('lapsed.id')),
    )
    .with('reopened', (qc) =>
      qc
        .updateTable('events')
        .set({ dispatched_at: null })
        .where(
          'id',
          '=',
          sql<number>`any(array(select e.value::bigint from lapsed, json_array_elements_text(lapsed.event_ids::json) as e(value)))`,
        )
        .where(noFirstDelivery)
        .returning('id'),
    )
    .selectFrom('reopened')
    .select((eb) => eb.fn.countAll<number>().as('reopened')),
);

/**
 * Leases up to `limit` pending deliveries that are due and not leased (or whose lease expired). When none
 * is due, `nextDueAt` is the time the earliest unleased pending one falls due (null: there is none).
 */
export async function claimDueDeliveries(
  db: Executor,
  lease: Lease,
  limit: number,
  known = false,
): Promise<{ claimed: ClaimedDelivery[]; nextDueAt: string | null; lapsed: boolean }> {
  // Unless probeWork just found one due, a read first (the earliest pending row, and whether a claim's
  // lease lapsed: a busy worker does not probe, and this read is its regular one); only when something
  // is due does it write (and lock).
  let lapsed = false;
  if (!known) {
    const first = await dueRead.first(db, lease.now);
    lapsed = first?.lapsed_lease != null;
    const nextDueAt = first?.next_attempt_at ?? null;
    if (nextDueAt === null || nextDueAt > lease.now) return { claimed: [], nextDueAt, lapsed };
  }
  let due = unleasedPending(db, lease.now)
    .select('id')
    .where('next_attempt_at', '<=', lease.now)
    .limit(limit);
  if (isPostgres(db)) due = due.forUpdate().skipLocked();
  const leased = await db
    .updateTable('webhook_deliveries')
    .set({ locked_by: lease.workerId, locked_until: lease.until })
    .where('id', 'in', due)
    .returning(['id'])
    .execute();
  if (leased.length === 0) return { claimed: [], nextDueAt: null, lapsed };
  const rows = await db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('events as e', 'e.id', 'd.event_id')
    .leftJoin('webhook_endpoints as w', 'w.organization_id', 'd.organization_id')
    .select([
      'd.id',
      'd.delivery_id',
      'd.attempt_count',
      'd.event_type',
      'e.payload',
      'w.endpoint_url',
      'w.secret_encrypted',
      'w.previous_secret_encrypted',
      'w.previous_secret_expires_at',
    ])
    .where(
      'd.id',
      'in',
      leased.map((row) => row.id),
    )
    .execute();
  // The join returns every row it leased unless a delivery's event is gone: possible on PostgreSQL since
  // migration 025 dropped the key (an old process during an upgrade, an operator's hand edit), and on
  // SQLite only through a connection with the key off. Such a delivery can never be sent; left as it
  // is, its lease would lapse and it would be claimed again at every due claim, for ever, `pending` in
  // the merchant's log. The common path pays nothing: the counts only differ when one is missing.
  if (rows.length < leased.length) {
    const returned = new Set(rows.map((row) => row.id));
    await failEventless(
      db,
      lease,
      leased.flatMap((row) => (returned.has(row.id) ? [] : [row.id])),
    );
  }
  const claimed = rows.map(
    (row): ClaimedDelivery => ({
      id: row.id,
      deliveryId: row.delivery_id,
      attemptCount: row.attempt_count,
      eventType: row.event_type,
      payload: row.payload,
      url: row.endpoint_url,
      secretEncrypted: row.secret_encrypted,
      previousSecretEncrypted:
        row.previous_secret_expires_at !== null && row.previous_secret_expires_at > lease.now
          ? row.previous_secret_encrypted
          : null,
      first: null,
      leaseId: null,
    }),
  );
  return { claimed, nextDueAt: null, lapsed };
}

/** Why a delivery whose event no longer exists was failed without a send (claimDueDeliveries). */
const EVENT_GONE_ERROR = 'The event of this delivery no longer exists.';

/**
 * Finishes for good the deliveries of `ids` whose event is gone: `failed`, the lease cleared, the
 * reason in `last_error`, which the merchant's log shows. No attempt row is written: nothing was sent,
 * so there is no URL, answer or duration to record, and `attempt_count` stays the number of requests
 * actually made. Only rows this worker still leases are touched, and only while their event is indeed
 * missing, so that a row the join left out for any other reason keeps its lease and is claimed again
 * when it lapses, as before.
 */
async function failEventless(db: Executor, lease: Lease, ids: number[]) {
  await db
    .updateTable('webhook_deliveries')
    .set({
      status: sql.lit('failed'),
      locked_by: null,
      locked_until: null,
      last_error: EVENT_GONE_ERROR,
      updated_at: lease.now,
    })
    .where('id', 'in', ids)
    .where('locked_by', '=', lease.workerId)
    .where('status', '=', sql.lit('pending'))
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('events').select('events.id').whereRef('events.id', '=', 'webhook_deliveries.event_id'),
        ),
      ),
    )
    .execute();
}

/**
 * The webhook work not yet at rest, in one read: events not yet claimed, claims whose first deliveries
 * are not all written (their leases), and deliveries still pending. Zero once every event committed so
 * far has been sent and recorded (tests and benchmarks wait for it; not the worker's own path).
 */
export async function webhooksInFlight(db: Executor): Promise<number> {
  const count = (table: 'events' | 'webhook_leases' | 'webhook_deliveries') =>
    db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n'));
  const row = await db
    .selectNoFrom(() => [
      count('events').where('dispatched_at', 'is', null).as('events'),
      count('webhook_leases').as('leases'),
      count('webhook_deliveries').where('status', '=', sql.lit('pending')).as('deliveries'),
    ])
    .executeTakeFirstOrThrow();
  return Number(row.events) + Number(row.leases) + Number(row.deliveries);
}
