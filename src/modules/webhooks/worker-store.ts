// The worker's queries: turn undispatched outbox events into deliveries, claim due deliveries under a
// lease (FOR UPDATE SKIP LOCKED on PostgreSQL; SQLite has one writer), and record attempt outcomes.
import { type ExpressionBuilder, type Kysely, sql } from 'kysely';
import { isPostgres } from '../../db/connection.ts';
import type { Database, Executor } from '../../db/database.ts';
import { prepareQuery } from '../../db/prepared.ts';
import type { Environment } from '../api-keys/table.ts';

/**
 * A delivery this worker holds the lease of, with everything needed to send it. An event's first
 * delivery has no row yet (`id` null): the lease is on the event, and the row is written after the send
 * with its outcome (`first` has what it needs).
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
  ]),
);

export interface WorkProbe {
  /** Some outbox event waits for a claim. */
  events: boolean;
  /** When the earliest unleased pending delivery falls due (null: there is none). */
  nextDueAt: string | null;
}

export async function probeWork(db: Executor, now: string): Promise<WorkProbe> {
  const row = await workProbe.first(db, now);
  return { events: row?.event_id != null, nextDueAt: row?.next_attempt_at ?? null };
}

/**
 * The claim's one statement, prepared (named on PostgreSQL): a statement of three window reads and two
 * subqueries, parsed and planned at every round it was, and built by Kysely at every round.
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
  ) => {
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
      .set({ locked_by: workerId, locked_until: until })
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
  },
);

/**
 * Leases up to `limit` outbox events to this worker, so that their first deliveries are sent at once;
 * the delivery rows are written after the sends, with their outcomes (recordAttempts). Events of
 * organizations without an endpoint are marked dispatched with no delivery: webhooks start with the
 * events after the endpoint is set. `deliveryId` names each event's first delivery, the same at every
 * claim of the event (a lease that lapsed mid-send is sent again under the same webhook id).
 */
export async function dispatchEvents(
  db: Kysely<Database>,
  lease: Lease,
  limit: number,
  deliveryId: (event: { id: number; created_at: string }) => string,
  from = 0,
) {
  // Leased in one statement, with each event's endpoint read in it (other dispatchers skip the rows
  // it locks): no transaction, one round trip. An event whose organization has no endpoint is then
  // marked dispatched; should the process die first, its lease lapses and the next claim marks it.
  const windows = claimWindows(limit);
  const events = (
    await leaseEvents.all(
      db,
      lease.workerId,
      lease.until,
      lease.now,
      limit,
      windows.first,
      windows.second,
      from,
    )
  ).sort((a, b) => a.id - b.id);
  const claimed: ClaimedDelivery[] = [];
  const undeliverable: number[] = [];
  for (const event of events) {
    if (event.endpoint_url === null || event.secret_encrypted === null) {
      undeliverable.push(event.id);
      continue;
    }
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
    });
  }
  if (undeliverable.length > 0)
    await db
      .updateTable('events')
      .set({ dispatched_at: lease.now, locked_by: null, locked_until: null })
      .where('id', 'in', undeliverable)
      .execute();
  return { events: events.length, claimed, lowest: events.length > 0 ? events[0].id : null };
}

/**
 * Leases up to `limit` pending deliveries that are due and not leased (or whose lease expired). When none
 * is due, `nextDueAt` is the time the earliest unleased pending one falls due (null: there is none).
 */
export async function claimDueDeliveries(
  db: Executor,
  lease: Lease,
  limit: number,
  known = false,
): Promise<{ claimed: ClaimedDelivery[]; nextDueAt: string | null }> {
  // Unless probeWork just found one due, a read first (the earliest pending row); only when something
  // is due does it write (and lock).
  if (!known) {
    const first = await unleasedPending(db, lease.now).select('next_attempt_at').limit(1).executeTakeFirst();
    if (!first) return { claimed: [], nextDueAt: null };
    if (first.next_attempt_at > lease.now) return { claimed: [], nextDueAt: first.next_attempt_at };
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
  if (leased.length === 0) return { claimed: [], nextDueAt: null };
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
    }),
  );
  return { claimed, nextDueAt: null };
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
