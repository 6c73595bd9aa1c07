// The one insert of an event (emitEvent, or deferEvent when its id is not needed). Call it inside the
// transaction of the change that causes the event: the outbox row commits with the change or not at all. Delivery reads the outbox later.
import type { Executor } from '../../db/database.ts';
import { deferWrite } from '../../db/write-behind.ts';
import type { Environment } from '../api-keys/table.ts';

export type EventType =
  | 'transaction.status_changed'
  | 'refund.status_changed'
  | 'payout.status_changed'
  | 'webhook.test';

export interface NewEvent {
  organizationId: number;
  environment: Environment;
  type: EventType;
  /** The public id the event is about (payment, refund, payout, or checkout id), for the delivery log. */
  subject: string | null;
  /** The interface's payload, without `event` and `livemode`, which are added here. */
  payload: Record<string, unknown>;
  now: string;
}

function insertEvent(db: Executor, event: NewEvent) {
  const body = { event: event.type, ...event.payload, livemode: event.environment === 'production' };
  return db.insertInto('events').values({
    organization_id: event.organizationId,
    environment: event.environment,
    type: event.type,
    subject: event.subject,
    payload: JSON.stringify(body),
    created_at: event.now,
  });
}

export async function emitEvent(db: Executor, event: NewEvent): Promise<number> {
  const row = await insertEvent(db, event).returning('id').executeTakeFirstOrThrow();
  return row.id;
}

/** emitEvent for a caller that needs no id: the insert goes with the transaction's next statement (write-behind.ts). */
export function deferEvent(db: Executor, event: NewEvent): Promise<void> {
  return deferWrite(db, insertEvent(db, event));
}
