import type { Generated, Selectable } from 'kysely';
import type { Environment } from '../api-keys/table.ts';

export interface EventsTable {
  id: Generated<number>;
  organization_id: number;
  environment: Environment;
  type: string;
  /** What the event is about (a payment, refund or payout public id, or a checkout id). */
  subject: string | null;
  /** The JSON body exactly as it will be sent. */
  payload: string;
  created_at: string;
  dispatched_at: string | null;
  /**
   * A lease as a worker before migration 026 took it (the worker sending the event's first delivery, and
   * until when); a claim now writes a `webhook_leases` row instead, and dispatches the event at once.
   */
  locked_by: string | null;
  locked_until: string | null;
}

/**
 * On PostgreSQL only (migration 027): the feed's order, one row per event, written by a trigger on
 * events' insert. Not on `events` itself: the worker's dispatch update of an event is not HOT and
 * writes every index of `events` again.
 */
export interface EventFeedTable {
  event_id: number;
  organization_id: number;
  /** xid8 of the transaction that wrote the event, by the column's default; '0' for events from before 027. */
  tx: Generated<string>;
}

export type EventRow = Selectable<EventsTable>;

export interface EventTables {
  events: EventsTable;
  event_feed: EventFeedTable;
}
