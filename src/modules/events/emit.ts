// The one function that writes an event. Call it inside the transaction of the change that causes
// the event: the outbox row commits with the change or not at all. Delivery reads the outbox later.
import type { Executor } from '../../db/database.ts';
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

export async function emitEvent(db: Executor, event: NewEvent): Promise<number> {
  const body = { event: event.type, ...event.payload, livemode: event.environment === 'production' };
  const row = await db
    .insertInto('events')
    .values({
      organization_id: event.organizationId,
      environment: event.environment,
      type: event.type,
      subject: event.subject,
      payload: JSON.stringify(body),
      created_at: event.now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}
