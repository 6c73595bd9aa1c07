// The delivery log: what was sent to the merchant's endpoint, each attempt's outcome, and manual
// redelivery (a new delivery with a new delivery id, for the same event and payload).
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { choiceParam, pageRequest, paginated, param, queryOf } from '../../http/pagination.ts';
import { isUuid, newUuid } from '../../lib/ids.ts';
import { type Actor, recordAudit } from '../audit/record.ts';
import type { EventType } from '../events/emit.ts';
import { maskCredentials } from './endpoint-url.ts';
import * as store from './store.ts';
import type { DeliveryStatus, WebhookAttemptRow, WebhookDeliveryRow } from './table.ts';

/** The 409 of redeliver/ for a delivery whose event is gone (documented in its route schema). */
const EVENTLESS_REDELIVERY = 'The event of this delivery no longer exists, so it cannot be redelivered.';

export const DELIVERY_STATUSES: DeliveryStatus[] = ['pending', 'delivered', 'failed'];
export const EVENT_TYPES: EventType[] = [
  'transaction.status_changed',
  'refund.status_changed',
  'payout.status_changed',
  'webhook.test',
];

function presentDelivery(row: WebhookDeliveryRow, redeliveryOf: string | null) {
  return {
    id: row.delivery_id,
    event: row.event_type,
    event_id: row.event_id,
    subject: row.subject,
    livemode: row.environment === 'production',
    status: row.status,
    attempt_count: row.attempt_count,
    next_attempt_at: row.status === 'pending' ? row.next_attempt_at : null,
    last_response_status: row.last_response_status,
    last_error: row.last_error,
    redelivery_of: redeliveryOf,
    created_at: row.created_at,
    updated_at: row.updated_at,
    delivered_at: row.delivered_at,
  };
}

function presentAttempt(row: WebhookAttemptRow) {
  return {
    attempt: row.attempt,
    attempted_at: row.attempted_at,
    // Attempts recorded before credentials were masked (endpoint-url.ts) carry them: not shown again.
    url: maskCredentials(row.url),
    response_status: row.response_status,
    duration_ms: row.duration_ms,
    error: row.error,
    response_body: row.response_body,
  };
}

async function redeliveryIds(ctx: AppContext, rows: WebhookDeliveryRow[]) {
  const ids = [...new Set(rows.flatMap((row) => (row.redelivery_of === null ? [] : [row.redelivery_of])))];
  const found = await store.deliveryIdsByNumericId(ctx.db, ids);
  return new Map(found.map((row) => [row.id, row.delivery_id]));
}

/** GET …/deliveries/?environment=&status=&event=&subject=, newest first. */
export async function listDeliveries(ctx: AppContext, organizationId: number, request: FastifyRequest) {
  const query = queryOf(request);
  const filter = {
    environment: choiceParam(query, 'environment', ['production', 'sandbox'] as const),
    status: choiceParam(query, 'status', DELIVERY_STATUSES),
    event: choiceParam(query, 'event', EVENT_TYPES),
    subject: param(query, 'subject') || undefined,
  };
  const page = pageRequest(query);
  const [count, rows] = await Promise.all([
    store.countDeliveries(ctx.db, organizationId, filter),
    store.listDeliveries(ctx.db, organizationId, filter, { limit: page.pageSize, offset: page.offset }),
  ]);
  const originals = await redeliveryIds(ctx, rows);
  const results = rows.map((row) =>
    presentDelivery(row, row.redelivery_of === null ? null : (originals.get(row.redelivery_of) ?? null)),
  );
  return paginated(request, page, count, results);
}

async function findOwned(ctx: AppContext, organizationId: number, id: string) {
  const row = isUuid(id) ? await store.findDelivery(ctx.db, organizationId, id.toLowerCase()) : undefined;
  if (!row) throw new NotFoundError('Delivery not found.');
  return row;
}

export async function getDelivery(ctx: AppContext, organizationId: number, id: string) {
  const row = await findOwned(ctx, organizationId, id);
  const [attempts, event, originals] = await Promise.all([
    store.listAttempts(ctx.db, row.id),
    store.eventPayload(ctx.db, organizationId, row.event_id),
    redeliveryIds(ctx, [row]),
  ]);
  return {
    ...presentDelivery(row, row.redelivery_of === null ? null : (originals.get(row.redelivery_of) ?? null)),
    payload: event ? (JSON.parse(event.payload) as unknown) : null,
    attempts: attempts.map(presentAttempt),
  };
}

/** A new delivery of the same event: new delivery id, full retry schedule, sent at once. Audited with it. */
export async function redeliver(ctx: AppContext, organizationId: number, id: string, actor: Actor) {
  const original = await findOwned(ctx, organizationId, id);
  const now = ctx.clock().toISOString();
  const row = await ctx.db.transaction().execute(async (trx) => {
    if (!(await store.findEndpoint(trx, organizationId))) {
      throw new ValidationError('No webhook endpoint is configured. Set endpoint_url first.');
    }
    if (!(await store.lockEventForDelivery(trx, organizationId, original.event_id))) {
      // Read again after the lock (on PostgreSQL it waited for a retention that was deleting the event):
      // retention deletes an event only once no delivery refers to it, so when the delivery is gone too
      // it was deleted since findOwned read it, and the answer is that of a delivery that does not exist.
      // A delivery that is still there has lost its event some other way (a hand edit, an old process
      // during an upgrade; the worker fails it): it exists, as GET says, but cannot be sent again.
      if (!(await store.findDelivery(trx, organizationId, original.delivery_id))) {
        throw new NotFoundError('Delivery not found.');
      }
      throw new ConflictError(EVENTLESS_REDELIVERY);
    }
    const delivery = await store.insertDelivery(trx, {
      deliveryId: newUuid(),
      organizationId,
      eventId: original.event_id,
      eventType: original.event_type,
      environment: original.environment,
      subject: original.subject,
      redeliveryOf: original.id,
      now,
    });
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'webhook.redelivered',
        target: { type: 'webhook_delivery', id: delivery.delivery_id },
        details: {
          redelivery_of: original.delivery_id,
          event: original.event_type,
          subject: original.subject,
        },
      },
      now,
    );
    return delivery;
  });
  return { ...presentDelivery(row, original.delivery_id), attempts: [] };
}
