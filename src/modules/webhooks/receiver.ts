// The public test receiver: accepts any POST for an organization's slug, keeps its last 100 requests
// (headers, raw body, whether the signature verifies with the current secret) for the dashboard.
import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { NotFoundError } from '../../http/errors.ts';
import { pageRequest, paginated, queryOf } from '../../http/pagination.ts';
import { openSecret, verifySignature } from './secret.ts';
import * as store from './store.ts';
import type { WebhookReceivedRow } from './table.ts';

export const RECEIVER_BODY_LIMIT = 256 * 1024;
export const RECEIVED_KEPT = 100;
const REDACTED = new Set(['authorization', 'cookie', 'api-key', 'proxy-authorization']);

function keptHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    kept[name] = REDACTED.has(name) ? '[redacted]' : Array.isArray(value) ? value.join(', ') : value;
  }
  return kept;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as stored: UTF-8 text, or base64 for bytes text columns cannot hold (invalid UTF-8, NUL). */
function bodyText(body: Buffer): { text: string; encoding: 'utf8' | 'base64' } {
  try {
    if (body.includes(0)) throw new Error('NUL');
    return { text: utf8.decode(body), encoding: 'utf8' };
  } catch {
    return { text: body.toString('base64'), encoding: 'base64' };
  }
}

export async function receive(ctx: AppContext, slug: string, headers: IncomingHttpHeaders, body: Buffer) {
  const organization = await ctx.db
    .selectFrom('organizations')
    .select('id')
    .where('slug', '=', slug)
    .executeTakeFirst();
  if (!organization) throw new NotFoundError('Not found.');
  const endpoint = await store.findEndpoint(ctx.db, organization.id);
  const signature = headers['x-webhook-signature'];
  let valid: number | null = null;
  if (typeof signature === 'string' && endpoint) {
    valid = verifySignature(openSecret(endpoint.secret_encrypted, ctx.config.secretKey), body, signature)
      ? 1
      : 0;
  }
  const { text, encoding } = bodyText(body);
  const contentType = headers['content-type'];
  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .insertInto('webhook_received')
      .values({
        organization_id: organization.id,
        received_at: ctx.clock().toISOString(),
        content_type: typeof contentType === 'string' ? contentType : null,
        headers: JSON.stringify(keptHeaders(headers)),
        body: text,
        body_encoding: encoding,
        signature_valid: valid,
      })
      .execute();
    // Keep the newest RECEIVED_KEPT: drop what is older than the last one kept.
    await trx
      .deleteFrom('webhook_received')
      .where('organization_id', '=', organization.id)
      .where('id', '<', (eb) =>
        eb
          .selectFrom('webhook_received')
          .select('id')
          .where('organization_id', '=', organization.id)
          .orderBy('id', 'desc')
          .limit(1)
          .offset(RECEIVED_KEPT - 1),
      )
      .execute();
  });
  return { received: true };
}

function presentReceived(row: WebhookReceivedRow) {
  const headers = JSON.parse(row.headers) as Record<string, string>;
  return {
    id: row.id,
    received_at: row.received_at,
    event: headers['x-webhook-event'] ?? null,
    delivery_id: headers['x-webhook-delivery-id'] ?? null,
    content_type: row.content_type,
    headers,
    body: row.body,
    body_encoding: row.body_encoding,
    signature_valid: row.signature_valid === null ? null : row.signature_valid === 1,
  };
}

export async function listReceived(ctx: AppContext, organizationId: number, request: FastifyRequest) {
  const page = pageRequest(queryOf(request));
  const scoped = ctx.db.selectFrom('webhook_received').where('organization_id', '=', organizationId);
  const [counted, rows] = await Promise.all([
    scoped.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow(),
    scoped.selectAll().orderBy('id', 'desc').limit(page.pageSize).offset(page.offset).execute(),
  ]);
  return paginated(request, page, Number(counted.count), rows.map(presentReceived));
}
