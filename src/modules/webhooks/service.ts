// The organization's webhook endpoint: set it (the secret is made with the first URL), rotate the
// secret, and send a test event or a payment's transaction.status_changed on request.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { isPublicId, newUuid, parseNumericId } from '../../lib/ids.ts';
import { type Actor, recordAudit } from '../audit/record.ts';
import { emitEvent, type NewEvent } from '../events/emit.ts';
import { transactionEventPayload } from '../payments/events.ts';
import { CREDENTIALS_PROBLEM, hasCredentials, maskCredentials } from './endpoint-url.ts';
import { generateSecret, openSecret, sealSecret, secretPreview } from './secret.ts';
import { assertPublicHost, BlockedAddressError, isOwnTestReceiver } from './ssrf.ts';
import * as store from './store.ts';
import type { WebhookEndpointRow } from './table.ts';

export const TEST_MESSAGE = 'This is a test webhook from Kassa.';

/** When the previous secret of `row` stops signing, if it still signs at `now`; else null. */
function previousSecretExpiry(row: WebhookEndpointRow, now: string): string | null {
  const expiresAt = row.previous_secret_expires_at;
  return row.previous_secret_encrypted !== null && expiresAt !== null && expiresAt > now ? expiresAt : null;
}

export function presentEndpoint(ctx: AppContext, row: WebhookEndpointRow | undefined) {
  if (!row)
    return {
      endpoint_url: null,
      secret_preview: null,
      created_at: null,
      updated_at: null,
      previous_secret_expires_at: null,
      endpoint_problem: null,
    };
  return {
    // An endpoint stored before credentials were refused: its password is not shown again.
    endpoint_url: maskCredentials(row.endpoint_url),
    secret_preview: secretPreview(openSecret(row.secret_encrypted, ctx.config.secretKey)),
    created_at: row.created_at,
    updated_at: row.updated_at,
    previous_secret_expires_at: previousSecretExpiry(row, ctx.clock().toISOString()),
    endpoint_problem: hasCredentials(row.endpoint_url) ? CREDENTIALS_PROBLEM : null,
  };
}

export async function getEndpoint(ctx: AppContext, organizationId: number) {
  return presentEndpoint(ctx, await store.findEndpoint(ctx.db, organizationId));
}

/**
 * http(s) only, no credentials (user:password@), no fragments; the host must resolve to public addresses only (the SSRF guard), unless
 * KASSA_WEBHOOK_ALLOW_PRIVATE is set or the URL is this service's own public test receiver.
 */
export async function validateEndpointUrl(ctx: AppContext, raw: string): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ValidationError('endpoint_url: must be a valid URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ValidationError('endpoint_url: must be an http or https URL.');
  }
  if (!url.hostname) throw new ValidationError('endpoint_url: must name a host.');
  // Credentials in the URL would be stored, shown (GET, each attempt's url, the audit log) and sent
  // in clear; the signature is how a receiver authenticates Kassa.
  if (url.username || url.password) {
    throw new ValidationError('endpoint_url: may not contain credentials (user:password@).');
  }
  if (url.hash) throw new ValidationError('endpoint_url: may not contain a fragment (#...).');
  if (!ctx.config.webhookAllowPrivate && !isOwnTestReceiver(url.href, ctx.config.publicUrl)) {
    try {
      await assertPublicHost(url.hostname);
    } catch (error) {
      if (error instanceof BlockedAddressError) throw new ValidationError(`endpoint_url: ${error.message}`);
      throw new ValidationError(`endpoint_url: the host ${url.hostname} could not be resolved.`);
    }
  }
  return raw.trim();
}

/** Sets the URL; the first time, a secret is created too and returned once as raw_secret. */
export async function putEndpoint(ctx: AppContext, organizationId: number, rawUrl: string, actor: Actor) {
  const url = await validateEndpointUrl(ctx, rawUrl);
  const now = ctx.clock().toISOString();
  return ctx.db.transaction().execute(async (trx) => {
    const existing = await store.findEndpoint(trx, organizationId);
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'webhook.endpoint_changed',
        target: { type: 'webhook_endpoint', id: organizationId },
        // A URL stored with credentials before they were refused: its password is not written again.
        details: { from: existing ? maskCredentials(existing.endpoint_url) : null, to: url },
      },
      now,
    );
    if (existing) {
      const row = await store.updateEndpoint(trx, organizationId, { endpoint_url: url, updated_at: now });
      return presentEndpoint(ctx, row);
    }
    const secret = generateSecret();
    const row = await store.insertEndpoint(trx, {
      organizationId,
      url,
      secretEncrypted: sealSecret(secret, ctx.config.secretKey),
      now,
    });
    return { ...presentEndpoint(ctx, row), raw_secret: secret };
  });
}

async function requireEndpoint(db: Executor, organizationId: number, lock = false) {
  const endpoint = await (lock ? store.lockEndpoint : store.findEndpoint)(db, organizationId);
  if (!endpoint) throw new ValidationError('No webhook endpoint is configured. Set endpoint_url first.');
  return endpoint;
}

/**
 * A new secret, returned once as raw_secret. By default only it signs from now on (the interface: after
 * a rotation only the new secret verifies), and a previous secret kept by an earlier rotation is
 * dropped. With `previousSecretSeconds` > 0 (asked for explicitly) the secret it replaces also signs the
 * Standard Webhooks header for that long, so a receiver can deploy the new one without refusing
 * deliveries meanwhile; X-Webhook-Signature carries the new secret's signature alone.
 */
export async function rotateSecret(
  ctx: AppContext,
  organizationId: number,
  actor: Actor,
  previousSecretSeconds = 0,
) {
  const now = ctx.clock();
  const at = now.toISOString();
  return ctx.db.transaction().execute(async (trx) => {
    // Locked: of two rotations at once, the second keeps the first one's new secret as its previous
    // one, not the secret both would have read.
    const existing = await requireEndpoint(trx, organizationId, true);
    const previousExpiresAt =
      previousSecretSeconds > 0 ? new Date(now.getTime() + previousSecretSeconds * 1000).toISOString() : null;
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'webhook.secret_rotated',
        target: { type: 'webhook_endpoint', id: organizationId },
        details: { previous_secret_expires_at: previousExpiresAt },
      },
      at,
    );
    const secret = generateSecret();
    const row = await store.updateEndpoint(trx, organizationId, {
      secret_encrypted: sealSecret(secret, ctx.config.secretKey),
      secret_rotated_at: at,
      // Already sealed with the same key: kept as it was stored.
      previous_secret_encrypted: previousExpiresAt === null ? null : existing.secret_encrypted,
      previous_secret_expires_at: previousExpiresAt,
      updated_at: at,
    });
    return { ...presentEndpoint(ctx, row), raw_secret: secret };
  });
}

/** Writes the event and its delivery together, so the caller can be told the delivery id. */
async function emitAndQueue(trx: Executor, event: NewEvent) {
  const eventId = await emitEvent(trx, event);
  const delivery = await store.insertDelivery(trx, {
    deliveryId: newUuid(),
    organizationId: event.organizationId,
    eventId,
    eventType: event.type,
    environment: event.environment,
    subject: event.subject,
    redeliveryOf: null,
    now: event.now,
  });
  await store.markEventDispatched(trx, eventId, event.now);
  return { delivery_id: delivery.delivery_id, event: event.type, status: delivery.status };
}

export async function sendTestEvent(ctx: AppContext, organizationId: number, actor: Actor) {
  const now = ctx.clock().toISOString();
  return ctx.db.transaction().execute(async (trx) => {
    await requireEndpoint(trx, organizationId);
    const queued = await emitAndQueue(trx, {
      organizationId,
      environment: 'production',
      type: 'webhook.test',
      subject: null,
      payload: { message: TEST_MESSAGE },
      now,
    });
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'webhook.test_sent',
        target: { type: 'webhook_delivery', id: queued.delivery_id },
        details: { event: queued.event },
      },
      now,
    );
    return queued;
  });
}

function findPayment(db: Executor, organizationId: number, reference: string | undefined) {
  let query = db.selectFrom('payments').selectAll().where('organization_id', '=', organizationId);
  if (reference === undefined) return query.orderBy('id', 'desc').limit(1).executeTakeFirst();
  const numeric = parseNumericId(reference);
  if (numeric !== null) query = query.where('id', '=', numeric);
  else if (isPublicId('payment', reference)) query = query.where('public_id', '=', reference);
  else return Promise.resolve(undefined);
  return query.executeTakeFirst();
}

/** Sends transaction.status_changed again for one payment (the latest when none is named). */
export async function resendTransaction(
  ctx: AppContext,
  organizationId: number,
  reference: string | undefined,
  actor: Actor,
) {
  const now = ctx.clock().toISOString();
  return ctx.db.transaction().execute(async (trx) => {
    await requireEndpoint(trx, organizationId);
    const payment = await findPayment(trx, organizationId, reference?.trim());
    if (!payment)
      throw new NotFoundError(reference === undefined ? 'No payment to send.' : 'Payment not found.');
    const queued = await emitAndQueue(trx, {
      organizationId,
      environment: payment.environment,
      type: 'transaction.status_changed',
      subject: payment.public_id,
      payload: await transactionEventPayload(trx, payment),
      now,
    });
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'webhook.test_transaction_sent',
        target: { type: 'webhook_delivery', id: queued.delivery_id },
        details: { event: queued.event, transaction_id: payment.public_id, environment: payment.environment },
      },
      now,
    );
    return { ...queued, transaction_id: payment.public_id };
  });
}
