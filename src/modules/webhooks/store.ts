// Queries of the webhooks module outside the worker's claim: endpoints, the delivery log, and the
// test receiver's kept requests. Every lookup is scoped by organization.
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import type { Environment } from '../api-keys/table.ts';
import type { DeliveryStatus } from './table.ts';

export function findEndpoint(db: Executor, organizationId: number) {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .executeTakeFirst();
}

/** The endpoint, locked until the transaction ends on PostgreSQL (SQLite's transactions take the write lock first). */
export function lockEndpoint(db: Executor, organizationId: number) {
  const query = db.selectFrom('webhook_endpoints').selectAll().where('organization_id', '=', organizationId);
  return (isPostgres(db) ? query.forUpdate() : query).executeTakeFirst();
}

export function insertEndpoint(
  db: Executor,
  values: { organizationId: number; url: string; secretEncrypted: string; now: string },
) {
  return db
    .insertInto('webhook_endpoints')
    .values({
      organization_id: values.organizationId,
      endpoint_url: values.url,
      secret_encrypted: values.secretEncrypted,
      created_at: values.now,
      updated_at: values.now,
      secret_rotated_at: values.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function updateEndpoint(
  db: Executor,
  organizationId: number,
  changes: {
    endpoint_url?: string;
    secret_encrypted?: string;
    secret_rotated_at?: string;
    previous_secret_encrypted?: string | null;
    previous_secret_expires_at?: string | null;
    updated_at: string;
  },
) {
  return db
    .updateTable('webhook_endpoints')
    .set(changes)
    .where('organization_id', '=', organizationId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

/** Previous secrets whose overlap has ended at `now` are dropped (the retention loop, every minute). */
export async function dropExpiredPreviousSecrets(db: Executor, now: string): Promise<number> {
  const result = await db
    .updateTable('webhook_endpoints')
    .set({ previous_secret_encrypted: null, previous_secret_expires_at: null })
    .where('previous_secret_expires_at', '<=', now)
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}

export interface NewDelivery {
  deliveryId: string;
  organizationId: number;
  eventId: number;
  eventType: string;
  environment: Environment;
  subject: string | null;
  redeliveryOf: number | null;
  now: string;
}

export function deliveryValues(delivery: NewDelivery) {
  return {
    delivery_id: delivery.deliveryId,
    organization_id: delivery.organizationId,
    event_id: delivery.eventId,
    event_type: delivery.eventType,
    environment: delivery.environment,
    subject: delivery.subject,
    status: 'pending' as const,
    attempt_count: 0,
    next_attempt_at: delivery.now,
    redelivery_of: delivery.redeliveryOf,
    created_at: delivery.now,
    updated_at: delivery.now,
  };
}

export function insertDelivery(db: Executor, delivery: NewDelivery) {
  return db
    .insertInto('webhook_deliveries')
    .values(deliveryValues(delivery))
    .returningAll()
    .executeTakeFirstOrThrow();
}

/**
 * The event a redelivery refers to, locked `FOR KEY SHARE` until the transaction ends on PostgreSQL:
 * retention skips an event so held, and a redelivery made after retention locked it waits and then finds
 * it gone (migration 025). SQLite's transactions take the write lock first, so a plain read is enough there.
 */
export function lockEventForDelivery(db: Executor, organizationId: number, eventId: number) {
  const query = db
    .selectFrom('events')
    .select('id')
    .where('id', '=', eventId)
    .where('organization_id', '=', organizationId);
  return (isPostgres(db) ? query.forKeyShare() : query).executeTakeFirst();
}

export function markEventDispatched(db: Executor, eventId: number, now: string) {
  return db.updateTable('events').set({ dispatched_at: now }).where('id', '=', eventId).execute();
}

export interface DeliveryFilter {
  /** Test mode shows sandbox deliveries only; absent: both. */
  environment?: 'production' | 'sandbox';
  status?: DeliveryStatus;
  event?: string;
  subject?: string;
}

function filtered(db: Executor, organizationId: number, filter: DeliveryFilter) {
  let query = db.selectFrom('webhook_deliveries').where('organization_id', '=', organizationId);
  if (filter.environment) query = query.where('environment', '=', filter.environment);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.event) query = query.where('event_type', '=', filter.event);
  if (filter.subject) query = query.where('subject', '=', filter.subject);
  return query;
}

export async function countDeliveries(db: Executor, organizationId: number, filter: DeliveryFilter) {
  const row = await filtered(db, organizationId, filter)
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(row.count);
}

export function listDeliveries(
  db: Executor,
  organizationId: number,
  filter: DeliveryFilter,
  page: { limit: number; offset: number },
) {
  return filtered(db, organizationId, filter)
    .selectAll()
    .orderBy('id', 'desc')
    .limit(page.limit)
    .offset(page.offset)
    .execute();
}

export function findDelivery(db: Executor, organizationId: number, deliveryId: string) {
  return db
    .selectFrom('webhook_deliveries')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('delivery_id', '=', deliveryId)
    .executeTakeFirst();
}

export function deliveryIdsByNumericId(db: Executor, ids: number[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db.selectFrom('webhook_deliveries').select(['id', 'delivery_id']).where('id', 'in', ids).execute();
}

export function listAttempts(db: Executor, deliveryRowId: number) {
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('delivery_id', '=', deliveryRowId)
    .orderBy('attempt', 'asc')
    .orderBy('id', 'asc')
    .execute();
}

export function eventPayload(db: Executor, organizationId: number, eventId: number) {
  return db
    .selectFrom('events')
    .select(['payload', 'created_at'])
    .where('organization_id', '=', organizationId)
    .where('id', '=', eventId)
    .executeTakeFirst();
}
