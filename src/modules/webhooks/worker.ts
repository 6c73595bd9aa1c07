// The delivery worker of one process: claims work in batches (new outbox events first, then due
// retries), sends with a concurrency cap over keep-alive connections, and writes the outcomes in
// batches. Sends run in the background between ticks; up to MAX_WAITING claimed deliveries queue for
// a send slot, and one whose lease would end before its send could time out is dropped from the queue
// unsent (the lease then lapses and it is claimed again), so a queued delivery is never sent twice.
import { createHmac, hash } from 'node:crypto';
import type { AppContext } from '../../context.ts';
import type { OutboxWrite } from '../../db/outbox-signal.ts';
import { keyObject } from '../../lib/crypto.ts';
import { newUuid } from '../../lib/ids.ts';
import { maskCredentials } from './endpoint-url.ts';
import { type AttemptRecord, recordAttempts } from './outcomes.ts';
import { parseRetryAfter, retryDelay } from './schedule.ts';
import { openSecret, sign, standardWebhookHeaders } from './secret.ts';
import { type AttemptOutcome, isSuccess, WebhookSender } from './sender.ts';
import { isOwnTestReceiver } from './ssrf.ts';
import {
  type ClaimedDelivery,
  claimDueDeliveries,
  dispatchEvents,
  type Lease,
  probeWork,
  recoverLapsedLeases,
} from './worker-store.ts';

/** Sends in flight at once, per process (each holds a request, a socket and buffers: the memory cost). */
export const MAX_IN_FLIGHT = 64;
/**
 * Claimed deliveries waiting for a send slot, at most. Claiming ahead keeps the senders busy while the
 * next claim's transaction runs (a waiting delivery is a few hundred bytes; its lease outlasts the wait).
 */
const MAX_WAITING = 192;
/**
 * Sends in flight to one endpoint (scheme, host and port) at once: a slow endpoint with a backlog gets
 * this share of the process and the others keep the rest. Its surplus waits in the queue, and what
 * waits too long is let go unsent (the lease rule below) and claimed again later.
 */
export const MAX_PER_ENDPOINT = 32;
const CLAIM_BATCH = 256;
/** When the pool is nearly full, wait for this much room rather than claim a few rows at a time. */
const MIN_CLAIM = 64;
const ROOM_WAIT_MS = 500;
/**
 * Outcomes written by one flush at most. 500 took SQLite's backlog from 4,000-4,700 to 5,200-6,000
 * deliveries/s with the 50 ms delay below, but the service's peak memory from 170-182 MB to 203 MB
 * alone and 257 MB in a whole `npm run bench` (over the 250 MB target): the statements of such a flush
 * are large (13 values per row).
 */
const FLUSH_BATCH = 256;
/**
 * Outcomes wait this long to be written together (one statement per flush on PostgreSQL, a transaction
 * of five or more on SQLite). The send has happened by then; only the delivery log shows it later. At
 * 10 ms a stream of payments (the bench's pay flows, about 200 events/s) flushed every second event:
 * 3.5 statements per payment when a flush was five on PostgreSQL too.
 */
const FLUSH_DELAY_MS = 50;
/**
 * A round woken by commits that wrote events only skips the read of due deliveries while the last one
 * is this recent and named none due by now: this worker's own retries are in `nextDueAt`
 * (retriesScheduled), another worker's are that worker's to send, a lapsed lease is found by the next
 * round that reads (the warm poll's, or at the latest the safety poll's), a commit that wrote a
 * delivery to send (a redelivery, a test) makes the round read, and one that is not known (SQLite's log
 * watch, a LISTEN that has just connected) makes it probe (announce).
 */
const DUE_READ_MAX_AGE_MS = 1000;
/**
 * Room a round leaves for due retries when its last read of them is older than DUE_READ_MAX_AGE_MS.
 * Under a backlog every round's claim of new events filled all the room there was, so the read of due
 * retries (and of lapsed leases) never ran until the backlog had drained: another merchant's retry
 * waited out the whole backlog (test/webhooks-backlog-fairness.test.ts). Now at least once a second a
 * busy round claims this much less and reads what is due.
 */
const DUE_ROOM = 32;
/**
 * For this long after a round that found work, the idle loop polls every WARM_POLL_MS instead of the
 * safety poll: commits it is not told about (another process's on SQLite, a NOTIFY lost while LISTEN
 * reconnects) keep a steady stream's latency low, and an idle service is back to the safety poll soon.
 */
export const WARM_FOR_MS = 2000;
// Not while every commit that writes events is heard (PostgreSQL with its LISTEN connection up): the
// warm poll only finds what a NOTIFY announces anyway, and cost up to 100 statements a second under a
// steady stream (about one statement per payment of the bench's pay → sync flow).
const WARM_POLL_MS = 10;
/** A lease outlives the attempt's timeout; a crashed worker's deliveries are retried after it ends. */
export const LEASE_MARGIN_MS = 5000;
/**
 * How long a claim may read the outbox from the lowest event the last one took (claimFrom) before one
 * reads it from the start again: an event committed after a later one was claimed (its transaction took
 * its id first and committed last) waits at most this long.
 */
export const CLAIM_FROM_MS = 1000;

export class DeliveryWorker {
  readonly workerId = newUuid();
  private readonly ctx: AppContext;
  private readonly sender: WebhookSender;
  private readonly inFlight = new Set<Promise<void>>();
  /** Claimed deliveries waiting for a slot, per endpoint origin, oldest claim first. */
  private readonly waiting = new Map<string, { delivery: ClaimedDelivery; leaseUntil: number }[]>();
  private waitingCount = 0;
  /** Sends in flight per endpoint origin. */
  private readonly perEndpoint = new Map<string, number>();
  private pending: AttemptRecord[] = [];
  /** The lease of each record of `pending` (null: a retry's, on its delivery row). */
  private pendingLeases: (number | null)[] = [];
  /**
   * The `webhook_leases` rows of this worker's claims whose first deliveries are not all settled: how
   * many are left, and whether one was let go unsent or failed to finish (then the row stays, to lapse,
   * and recoverLapsedLeases makes its events claimable again).
   */
  private readonly leases = new Map<number, { left: number; keep: boolean }>();
  /** Leases whose deliveries are all in `pending` (or written): deleted by the flush that takes them. */
  private released: number[] = [];
  /**
   * Leases with an outcome in a flush that failed (its records are lost): never deleted by this worker,
   * so that they lapse and their events are claimed again (recoverLapsedLeases). Each is forgotten when
   * the flush that was to release it runs.
   */
  private readonly unwritten = new Set<number>();
  private flushing: Promise<void> = Promise.resolve();
  private flushScheduled = false;
  private failure: unknown = null;
  private roomWanted = 0;
  private outboxBusy = false;
  private wakeOnRoom: (() => void) | null = null;
  /** When the earliest unleased pending delivery falls due, as the last idle round read it (ms). */
  private nextDueAt: number | null = null;
  /** When a round last found work (Date.now()). */
  private lastWorkAt = Number.NEGATIVE_INFINITY;
  /** When the last round began (Date.now()). */
  private lastRoundAt = Number.NEGATIVE_INFINITY;
  /** When the last round that started sends began (Date.now()). */
  private lastClaimAt = Number.NEGATIVE_INFINITY;
  /**
   * Where the next claim of events reads the outbox from (worker-store.ts, claimableEventIds): the lowest
   * event an earlier claim took, since the claim that read from the start at claimFromSince. Below it
   * that claim found nothing to take but events another claim held, whose leases take them out of the
   * outbox's index (or, if that claim failed, are found by the next read from the start).
   */
  private claimFrom = 0;
  private claimFromSince = Number.NEGATIVE_INFINITY;
  /** When a round last read the due retries (the probe, or the due claim's own read). */
  private dueReadAt = Number.NEGATIVE_INFINITY;
  /** A commit that wrote outbox rows (this process's, or another's NOTIFY) was announced since the last round. */
  private signalled = false;
  /** One of those commits wrote a delivery to send. */
  private deliveriesSignalled = false;
  /**
   * The last round started sends and left nothing it knew of: its claim of events came back short and
   * it claimed no retry. The runner runs a round that started sends again at once; while every commit is
   * heard (hearsEveryCommit), that round's probe could only find what the commits heard since announce
   * (they make it claim instead), and probed after every claim of a steady stream: one statement more
   * per claim. What no commit announces is found as before: a retry at nextDueAt, a lapsed lease or
   * events other workers' claims held at that moment at the safety poll.
   */
  private drained = false;
  /** Whether every commit that writes events, in any process, is announced now (OutboxListener). */
  hearsEveryCommit: () => boolean = () => false;
  /** Wakes the loop in the given ms: called when a recorded outcome schedules a retry. */
  wakeLoop: (inMs?: number) => void = () => {};

  constructor(ctx: AppContext) {
    this.ctx = ctx;
    this.deliveryIdSalt = createHmac('sha256', keyObject(ctx.config.secretKey))
      .update('kassa webhook delivery ids')
      .digest('hex');
    this.sender = new WebhookSender({
      guarded: !ctx.config.webhookAllowPrivate,
      exempt: (url) => isOwnTestReceiver(url, ctx.config.publicUrl),
      timeoutMs: ctx.config.webhookTimeoutMs,
    });
  }

  /**
   * The webhook id of an event's first delivery, derived from the event so that a claim that lapsed
   * mid-send and is taken again sends the same id (receivers deduplicate by it): SHA-256 of a salt only
   * this service's secret key makes, the event's row id and its creation time (a database restored from
   * a backup gives no new event an id already sent), as a version-4-shaped UUID (122 bits of the hash)
   * like every other delivery id. No one outside can tell the id from the event. One plain hash per
   * delivery: an HMAC keyed per call costs 5 to 7 times as much (keyObject in lib/crypto.ts).
   */
  private readonly deliveryIdSalt: string;
  private readonly firstDeliveryId = (event: { id: number; created_at: string }): string => {
    const digest = hash('sha256', `${this.deliveryIdSalt}:${event.id}:${event.created_at}`, 'buffer');
    digest[6] = (digest[6] & 0x0f) | 0x40;
    digest[8] = (digest[8] & 0x3f) | 0x80;
    const hex = digest.subarray(0, 16).toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };

  private lease(): Lease {
    const now = this.ctx.clock();
    return {
      workerId: this.workerId,
      now: now.toISOString(),
      until: new Date(now.getTime() + this.ctx.config.webhookTimeoutMs + LEASE_MARGIN_MS).toISOString(),
    };
  }

  /**
   * A commit that wrote outbox rows was announced: the next round claims without probing first. A
   * commit not known to have written any (another process's, seen as a change of SQLite's log; a LISTEN
   * connection that has just (re)connected) only wakes the loop: its round's probe, a read, says what
   * there is, where a claim is a write (on SQLite, the database's one write lock).
   */
  announce(wrote: OutboxWrite): void {
    if (wrote === 'unknown') return;
    this.signalled = true;
    // A delivery to send (a redelivery, a test) is claimed by the due read: the round must make it.
    if (wrote === 'deliveries') this.deliveriesSignalled = true;
  }

  /** One round: claim as much as there is room for, start sending it; returns how much was started. */
  async tick(): Promise<number> {
    if (this.failure !== null) {
      const failure = this.failure;
      this.failure = null;
      throw failure;
    }
    this.lastRoundAt = Date.now();
    this.pump();
    if (this.free() < MIN_CLAIM) {
      await this.room(MIN_CLAIM);
      this.pump();
    }
    let room = this.free();
    if (room <= 0) return 0;
    let started = 0;
    const lease = this.lease();
    const signalled = this.signalled;
    const deliveriesSignalled = this.deliveriesSignalled;
    this.signalled = false;
    this.deliveriesSignalled = false;
    const drained = this.drained;
    this.drained = false;
    if (drained && !signalled && this.hearsEveryCommit()) return 0;
    // Unless the last round's claim was full or a commit was announced (work is probably waiting: the
    // claim itself finds out), one read says what there is.
    const probe = this.outboxBusy || signalled ? null : await probeWork(this.ctx.db, lease.now);
    if (probe) this.dueReadAt = Date.now();
    // A lapsed lease's events, made claimable again, are claimed by this round.
    if (probe?.lapsed && (await this.recover(lease.now)) > 0) probe.events = true;
    const probeNoneDue = probe !== null && (probe.nextDueAt === null || probe.nextDueAt > lease.now);
    if (probe && !probe.events && probeNoneDue) {
      this.nextDueAt = probe.nextDueAt === null ? null : Date.parse(probe.nextDueAt);
      return 0;
    }
    // A round whose read of due deliveries is stale leaves them DUE_ROOM (all of its room when it has no
    // more: a limit of 0 claims no event, and the full claim is the next round's).
    const dueStale = Date.now() - this.dueReadAt >= DUE_READ_MAX_AGE_MS;
    const limit = Math.min(dueStale ? Math.max(0, room - DUE_ROOM) : room, CLAIM_BATCH);
    const dispatched =
      (probe && !probe.events) || limit === 0
        ? { events: 0, claimed: [] }
        : await this.claimEvents(lease, limit);
    // A full claim means more is probably waiting: the next tick skips the idle check.
    this.outboxBusy = dispatched.events === limit;
    this.hold(dispatched.claimed);
    for (const delivery of dispatched.claimed) this.start(delivery, lease);
    started += dispatched.events;
    room -= dispatched.claimed.length;
    let dueClaimed = 0;
    const recentlyNoneDue =
      probe === null &&
      signalled &&
      !deliveriesSignalled &&
      Date.now() - this.dueReadAt < DUE_READ_MAX_AGE_MS &&
      (this.nextDueAt === null || this.nextDueAt > this.ctx.clock().getTime());
    if (room > 0 && probe !== null && probeNoneDue) {
      // The probe read a moment ago that no retry is due: no second read for it. One falling due since
      // is claimed at the round idleMs() schedules for it.
      this.nextDueAt = probe.nextDueAt === null ? null : Date.parse(probe.nextDueAt);
    } else if (room > 0 && !recentlyNoneDue) {
      this.dueReadAt = Date.now();
      const dueLease = this.lease();
      // Known due when the probe saw it (at the earlier lease time); the claim re-checks in its statement.
      const known = probe !== null && probe.nextDueAt !== null;
      const due = await claimDueDeliveries(this.ctx.db, dueLease, Math.min(room, CLAIM_BATCH), known);
      for (const delivery of due.claimed) this.start(delivery, dueLease);
      started += due.claimed.length;
      dueClaimed = due.claimed.length;
      this.nextDueAt = due.nextDueAt === null ? null : Date.parse(due.nextDueAt);
      // A claim's lease lapsed (the read says so; a busy worker does not probe): its events are claimed
      // by the next round.
      if (due.lapsed && (await this.recover(dueLease.now)) > 0) this.outboxBusy = true;
      // Retries were claimed: more may be due (the claim was bounded), so the next round reads again.
      if (due.claimed.length > 0) this.dueReadAt = Number.NEGATIVE_INFINITY;
    }
    // Work was seen even when none was claimed (other workers' claims held it at that moment): the loop
    // keeps the warm poll, not the safety poll, so this worker tries again in a few milliseconds.
    if (started > 0 || probe?.events) this.lastWorkAt = Date.now();
    if (started > 0) this.lastClaimAt = this.lastRoundAt;
    this.drained = started > 0 && !this.outboxBusy && dueClaimed === 0;
    return started;
  }

  /**
   * Makes the events of lapsed leases claimable again (recoverLapsedLeases); the next claim reads the
   * outbox from the start, since they are below claimFrom.
   */
  private async recover(now: string): Promise<number> {
    const reopened = await recoverLapsedLeases(this.ctx.db, now);
    if (reopened > 0) this.claimFromSince = Number.NEGATIVE_INFINITY;
    return reopened;
  }

  /** Counts a claim's first deliveries against its lease (settle counts them off). */
  private hold(claimed: ClaimedDelivery[]): void {
    for (const delivery of claimed) {
      if (delivery.leaseId === null) continue;
      const lease = this.leases.get(delivery.leaseId);
      if (lease) lease.left++;
      else this.leases.set(delivery.leaseId, { left: 1, keep: false });
    }
  }

  /**
   * One first delivery of a lease is settled: its outcome queued for the flush (`written`), or let go
   * unsent, or its attempt failed. Once all are, the lease is released with the flush that writes the
   * last outcome, unless one was not written: then the lease is left to lapse.
   */
  private settle(delivery: ClaimedDelivery, written: boolean): void {
    if (delivery.leaseId === null) return;
    const lease = this.leases.get(delivery.leaseId);
    if (!lease) return;
    lease.left--;
    if (!written) lease.keep = true;
    if (lease.left > 0) return;
    this.leases.delete(delivery.leaseId);
    if (!lease.keep) this.released.push(delivery.leaseId);
  }

  /**
   * The claim of outbox events, read from claimFrom (worker-store.ts, claimableEventIds) unless the last
   * read from the start is CLAIM_FROM_MS old. A claim read from claimFrom that finds nothing reads again
   * from the start at once: the commit that woke it may be of an event below claimFrom (its transaction
   * took its id before events this worker has claimed since, and committed after them).
   */
  private async claimEvents(lease: Lease, limit: number) {
    let from = Date.now() - this.claimFromSince >= CLAIM_FROM_MS ? 0 : this.claimFrom;
    let dispatched = await dispatchEvents(this.ctx.db, lease, limit, this.firstDeliveryId, from);
    if (dispatched.events === 0 && from > 0) {
      from = 0;
      dispatched = await dispatchEvents(this.ctx.db, lease, limit, this.firstDeliveryId, from);
    }
    if (from === 0) {
      this.claimFromSince = Date.now();
      this.claimFrom = 0;
    }
    if (dispatched.lowest !== null) this.claimFrom = Math.max(this.claimFrom, dispatched.lowest);
    return dispatched;
  }

  /**
   * How long a commit's wake-up waits: at once when no round that claimed work began in the last
   * `coalesceMs`, else until then. A lone commit is sent without delay; the commits of a busy moment go
   * in one claim per window. A round that found nothing (the one that follows every claim, a warm
   * poll's) delays nothing: counted, it held back about half the commits of a steady 500 events/s by up
   * to 5 ms (p50 commit → receiver 4.3-6.1 ms on PostgreSQL, against graphile-worker's 2.7-3.1).
   */
  wakeDelayMs(coalesceMs: number): number {
    return Math.max(0, this.lastClaimAt + coalesceMs - Date.now());
  }

  /**
   * How long the loop may sleep after a round that found nothing: the safety poll (or the warm poll just
   * after work), or less if a known retry falls due sooner (a millisecond late rather than early, so that round finds it due).
   */
  idleMs(): number {
    const warm = Date.now() - this.lastWorkAt < WARM_FOR_MS && !this.hearsEveryCommit();
    const poll = warm ? Math.min(WARM_POLL_MS, this.ctx.config.workerPollMs) : this.ctx.config.workerPollMs;
    if (this.nextDueAt === null) return poll;
    return Math.min(poll, Math.max(1, this.nextDueAt - this.ctx.clock().getTime() + 1));
  }

  /** Deliveries this worker could claim now: send slots plus waiting places not taken. */
  private free(): number {
    return MAX_IN_FLIGHT + MAX_WAITING - this.inFlight.size - this.waitingCount;
  }

  /**
   * Resolves once at least `wanted` slots are free, or after ROOM_WAIT_MS (queued deliveries of a busy
   * endpoint may have grown too old to keep, which only a pump notices).
   */
  private room(wanted: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wakeOnRoom = null;
        resolve();
      }, ROOM_WAIT_MS);
      timer.unref();
      this.roomWanted = wanted;
      this.wakeOnRoom = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private finished(task: Promise<void>, endpoint: string): void {
    this.inFlight.delete(task);
    const left = (this.perEndpoint.get(endpoint) ?? 1) - 1;
    if (left > 0) this.perEndpoint.set(endpoint, left);
    else this.perEndpoint.delete(endpoint);
    this.pump();
    if (this.wakeOnRoom && this.free() >= this.roomWanted) {
      const wake = this.wakeOnRoom;
      this.wakeOnRoom = null;
      wake();
    }
  }

  /**
   * Starts queued deliveries while there are send slots, skipping those whose endpoint has its share
   * in flight, and lets go of those whose lease no longer covers a whole attempt.
   */
  private pump(): void {
    if (this.waitingCount === 0) return;
    const latestStart = this.ctx.clock().getTime() + this.ctx.config.webhookTimeoutMs;
    for (const [endpoint, queue] of this.waiting) {
      while (queue.length > 0 && queue[0].leaseUntil - LEASE_MARGIN_MS / 2 < latestStart) {
        const dropped = queue.shift();
        this.waitingCount--;
        if (dropped) this.settle(dropped.delivery, false);
      }
      while (queue.length > 0 && this.canSend(endpoint)) {
        const entry = queue.shift();
        this.waitingCount--;
        if (entry) this.send(entry.delivery, endpoint);
      }
      if (queue.length === 0) this.waiting.delete(endpoint);
    }
  }

  private start(delivery: ClaimedDelivery, lease: Lease): void {
    const endpoint = endpointOf(delivery.url);
    if (this.canSend(endpoint)) this.send(delivery, endpoint);
    else {
      const queue = this.waiting.get(endpoint) ?? [];
      queue.push({ delivery, leaseUntil: Date.parse(lease.until) });
      this.waiting.set(endpoint, queue);
      this.waitingCount++;
    }
  }

  /** A send slot is free, and the endpoint is below its share. */
  private canSend(endpoint: string): boolean {
    return this.inFlight.size < MAX_IN_FLIGHT && (this.perEndpoint.get(endpoint) ?? 0) < MAX_PER_ENDPOINT;
  }

  private send(delivery: ClaimedDelivery, endpoint: string): void {
    this.perEndpoint.set(endpoint, (this.perEndpoint.get(endpoint) ?? 0) + 1);
    const task = this.attempt(delivery).then(
      (record) => {
        // Settled first: a lease whose last outcome this is goes with it, in the same flush.
        this.settle(delivery, true);
        this.enqueue(record, delivery.leaseId);
      },
      (error: unknown) => {
        this.settle(delivery, false);
        this.failure = error;
      },
    );
    this.inFlight.add(task);
    void task.finally(() => this.finished(task, endpoint));
  }

  private async attempt(delivery: ClaimedDelivery): Promise<AttemptRecord> {
    const attemptedAt = this.ctx.clock();
    const attempt = delivery.attemptCount + 1;
    let outcome: AttemptOutcome;
    try {
      if (delivery.url === null || delivery.secretEncrypted === null)
        throw new Error('No endpoint is configured.');
      const secret = openSecret(delivery.secretEncrypted, this.ctx.config.secretKey);
      const previous =
        delivery.previousSecretEncrypted === null
          ? null
          : openSecret(delivery.previousSecretEncrypted, this.ctx.config.secretKey);
      const timestamp = Math.floor(attemptedAt.getTime() / 1000);
      outcome = await this.sender.send(delivery.url, delivery.payload, {
        'content-type': 'application/json',
        'user-agent': 'Kassa-Webhooks/1.0',
        'x-webhook-event': delivery.eventType,
        'x-webhook-delivery-id': delivery.deliveryId,
        'x-webhook-timestamp': String(timestamp),
        'x-webhook-signature': sign(secret, delivery.payload),
        ...standardWebhookHeaders(secret, delivery.deliveryId, timestamp, delivery.payload, previous),
      });
    } catch (error) {
      // Not the receiver's doing (no endpoint, a secret that no longer decrypts): still one attempt.
      const message = error instanceof Error ? error.message : String(error);
      outcome = { status: null, error: message, durationMs: 0, retryAfter: null, responseBody: null };
    }
    const finished = this.ctx.clock().getTime();
    let next: AttemptRecord['outcome'];
    if (isSuccess(outcome)) next = { status: 'delivered' };
    else {
      const delay = retryDelay(
        this.ctx.config.webhookRetryScheduleMs,
        attempt,
        parseRetryAfter(outcome.retryAfter, finished),
      );
      next =
        delay === null
          ? { status: 'failed' }
          : { status: 'pending', nextAttemptAt: new Date(finished + delay).toISOString() };
    }
    return {
      deliveryRowId: delivery.id,
      deliveryId: delivery.deliveryId,
      eventType: delivery.eventType,
      first: delivery.first,
      attempt,
      attemptedAt: attemptedAt.toISOString(),
      // Not a password of a URL stored with credentials (endpoint-url.ts): the log shows it.
      url: delivery.url === null ? '' : maskCredentials(delivery.url),
      responseStatus: outcome.status,
      durationMs: outcome.durationMs,
      error: outcome.error,
      responseBody: outcome.responseBody,
      outcome: next,
    };
  }

  private enqueue(record: AttemptRecord, leaseId: number | null): void {
    this.pending.push(record);
    this.pendingLeases.push(leaseId);
    if (this.pending.length >= FLUSH_BATCH) {
      void this.flush();
    } else if (!this.flushScheduled) {
      this.flushScheduled = true;
      // A short wait gathers outcomes into fewer, larger transactions.
      setTimeout(() => void this.flush(), FLUSH_DELAY_MS);
    }
  }

  /**
   * Writes the queued outcomes; flushes run one after another. The leases a flush releases are those of
   * claims whose outcomes are all queued by then, less any with an outcome in an earlier flush that
   * failed (read when this flush runs, after the earlier ones): its events must be claimed again.
   */
  flush(): Promise<void> {
    this.flushScheduled = false;
    const batch = this.pending;
    const batchLeases = this.pendingLeases;
    const released = this.released;
    this.pending = [];
    this.pendingLeases = [];
    this.released = [];
    if (batch.length === 0 && released.length === 0) return this.flushing;
    this.flushing = this.flushing.then(() => {
      const leases = released.filter((id) => !this.unwritten.delete(id));
      return recordAttempts(this.ctx.db, this.workerId, batch, this.ctx.clock().toISOString(), leases).then(
        () => this.retriesScheduled(batch),
        (error: unknown) => {
          // Lost with the batch: each lease not released by this flush itself is kept by the later one.
          for (const id of batchLeases) if (id !== null && !leases.includes(id)) this.unwritten.add(id);
          this.failure = error;
        },
      );
    });
    return this.flushing;
  }

  /** Wakes the loop when the earliest retry just recorded falls due (a millisecond after, see idleMs). */
  private retriesScheduled(batch: AttemptRecord[]): void {
    let earliest = Number.POSITIVE_INFINITY;
    for (const record of batch)
      if (record.outcome.status === 'pending')
        earliest = Math.min(earliest, Date.parse(record.outcome.nextAttemptAt));
    if (earliest === Number.POSITIVE_INFINITY) return;
    // Known here too, not only to the loop's sleep: a round a commit wakes before then must not take
    // the retry for not due (and sleep past it) from an older read.
    this.nextDueAt = Math.min(this.nextDueAt ?? Number.POSITIVE_INFINITY, earliest);
    // And a round running now may overwrite that from a read that began before this commit (on
    // PostgreSQL the flush has a connection of its own): the next round woken by a commit reads again.
    this.dueReadAt = Number.NEGATIVE_INFINITY;
    this.wakeLoop(earliest - this.ctx.clock().getTime() + 1);
  }

  /** Lets the sends in flight finish (each is bounded by the timeout), writes their outcomes, closes. */
  async drain(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    await this.flush();
    this.sender.close();
  }
}

/** Endpoint URLs' origins, parsed once per URL (endpoints are few; deliveries are many). */
const origins = new Map<string, string>();

/** The origin deliveries to `url` share a limit by; '' for none or one that does not parse. */
function endpointOf(url: string | null): string {
  if (url === null) return '';
  let origin = origins.get(url);
  if (origin === undefined) {
    try {
      origin = new URL(url).origin;
    } catch {
      origin = '';
    }
    if (origins.size >= 1000) origins.clear();
    origins.set(url, origin);
  }
  return origin;
}

const workers = new WeakMap<AppContext, DeliveryWorker>();

export function deliveryWorker(ctx: AppContext): DeliveryWorker {
  let worker = workers.get(ctx);
  if (!worker) {
    worker = new DeliveryWorker(ctx);
    workers.set(ctx, worker);
  }
  return worker;
}

export async function stopDeliveryWorker(ctx: AppContext): Promise<void> {
  const worker = workers.get(ctx);
  if (!worker) return;
  workers.delete(ctx);
  await worker.drain();
}
