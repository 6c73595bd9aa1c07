// Payment links for the dashboard: create (snapshotting catalog prices), list, read with stats, update, delete.
// A link is production unless made in test mode (environment: sandbox): then its public page starts
// sandbox checkouts (the hosted page says "Test mode", the simulator pays them), so a merchant can try
// a link end to end without a real charge. The list shows one environment at a time.
import type { Updateable } from 'kysely';
import type { AppContext } from '../../context.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { isUuid, newUuid } from '../../lib/ids.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { type Actor, recordAudit } from '../audit/record.ts';
import { returnUrl } from '../checkout/input.ts';
import { getOrganization } from '../organizations/service.ts';
import { findSellableProducts } from '../products/service.ts';
import { linkTotals, presentLink } from './present.ts';
import type { CreateLinkInput, UpdateLinkInput } from './schemas.ts';
import * as store from './store.ts';
import type { LinkLine, PaymentLinkRow, PaymentLinksTable, PricingMode } from './table.ts';

const METADATA_MAX_CHARS = 16_384;
const RETURN_URLS = ['success_url', 'cancel_url', 'failed_url'] as const;
const UPDATABLE = new Set(['name', 'is_active', 'expires_at', 'max_uses', 'metadata', ...RETURN_URLS]);
const FIXED_AT_CREATION = new Set(['products', 'currency', 'pricing_mode']);
const READ_ONLY = new Set(['id', 'url', 'uses_count', 'status', 'stats', 'created_at', 'updated_at']);

/** A link id from a path: anything but a UUID is simply not found. */
export function parseLinkId(value: string): string {
  if (!isUuid(value)) throw new NotFoundError('Payment link not found.');
  return value.toLowerCase();
}

function cleanName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed) throw new ValidationError('name: may not be blank.');
  return trimmed;
}

/** Metadata may nest this deep: enough for any real use, and far from what overflows the stack. */
const METADATA_MAX_DEPTH = 32;

/** How deeply a JSON value nests, found without recursion (a hostile body may nest thousands deep). */
function nestingDepth(value: unknown): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 1]];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const [item, depth] = next;
    if (item === null || typeof item !== 'object') continue;
    deepest = Math.max(deepest, depth);
    if (deepest > METADATA_MAX_DEPTH) break;
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return deepest;
}

function serializeMetadata(metadata: Record<string, unknown> | null): string | null {
  if (metadata === null) return null;
  if (nestingDepth(metadata) > METADATA_MAX_DEPTH) {
    throw new ValidationError(`metadata: may nest at most ${METADATA_MAX_DEPTH} levels deep.`);
  }
  const text = JSON.stringify(metadata);
  if (text.length > METADATA_MAX_CHARS) {
    throw new ValidationError(`metadata: must be at most ${METADATA_MAX_CHARS} characters when serialized.`);
  }
  return text;
}

/** An ISO date-time, normalised so stored values compare correctly as text. */
function normalizeExpiry(value: string | null): string | null {
  if (value === null) return null;
  const time = Date.parse(value);
  if (Number.isNaN(time)) throw new ValidationError('expires_at: must be a valid ISO 8601 date-time.');
  return new Date(time).toISOString();
}

/** The merchant's own return URLs of a create or update body: any http(s) URL, or null. */
function returnUrls(input: Partial<Record<(typeof RETURN_URLS)[number], string | null>>) {
  const urls: Partial<Record<(typeof RETURN_URLS)[number], string | null>> = {};
  for (const field of RETURN_URLS) {
    if (input[field] !== undefined) urls[field] = returnUrl(field, input[field]);
  }
  return urls;
}

async function present(ctx: AppContext, organizationId: number, row: PaymentLinkRow) {
  const now = ctx.clock();
  const [sales, uses] = await Promise.all([
    store.salesByLink(ctx.db, organizationId, [row.uuid]),
    store.usesByLink(ctx.db, organizationId, [row.uuid], now.toISOString()),
  ]);
  return presentLink(row, sales.get(row.uuid), uses.get(row.uuid), ctx.config.publicUrl, now);
}

async function existingLink(ctx: AppContext, organizationId: number, id: string) {
  const row = await store.findLink(ctx.db, organizationId, parseLinkId(id));
  if (!row) throw new NotFoundError('Payment link not found.');
  return row;
}

export async function createLink(
  ctx: AppContext,
  organizationId: number,
  input: CreateLinkInput,
  actor: Actor,
) {
  const now = ctx.clock();
  const name = cleanName(input.name);
  const currency = input.currency ?? 'USD';
  const organization = await getOrganization(ctx.db, organizationId);
  const pricingMode: PricingMode =
    input.pricing_mode ?? (organization.price_mode === 'HT' ? 'TAX_EXCLUSIVE' : 'TAX_INCLUSIVE');
  const expiresAt = normalizeExpiry(input.expires_at ?? null);
  if (expiresAt !== null && Date.parse(expiresAt) <= now.getTime()) {
    throw new ValidationError('expires_at: must be in the future.');
  }
  const metadata = serializeMetadata(input.metadata ?? null);
  const urls = returnUrls(input);

  const catalog = await findSellableProducts(
    ctx.db,
    organizationId,
    input.products.map((item) => item.product_id),
    currency,
  );
  const lines: LinkLine[] = input.products.map((item) => {
    const product = catalog.get(item.product_id);
    if (!product) throw new ValidationError(`products: unknown product id "${item.product_id}".`);
    return {
      product_id: product.public_id,
      name: product.name,
      unit_price: Number(product.unit_price),
      quantity: item.quantity ?? 1,
    };
  });
  // A link no checkout could ever accept is refused now rather than at every customer's start.
  const { gross } = linkTotals(lines, pricingMode, toBigInt(organization.tax_rate_bp));
  const min = toBigInt(organization.min_payment);
  const max = toBigInt(organization.max_payment);
  if (gross < min || gross > max) {
    throw new ValidationError(
      `products: the link total ${formatAmount(gross)} ${currency} is outside the organization's payment limits (${formatAmount(min)} to ${formatAmount(max)}).`,
    );
  }

  const stamp = now.toISOString();
  const row = await ctx.db.transaction().execute(async (trx) => {
    const inserted = await store.insertLink(trx, {
      uuid: newUuid(),
      organization_id: organizationId,
      environment: input.environment ?? 'production',
      name,
      currency,
      pricing_mode: pricingMode,
      products: JSON.stringify(lines),
      expires_at: expiresAt,
      max_uses: input.max_uses ?? null,
      is_active: input.is_active === false ? 0 : 1,
      metadata,
      success_url: urls.success_url ?? null,
      cancel_url: urls.cancel_url ?? null,
      failed_url: urls.failed_url ?? null,
      deleted_at: null,
      created_at: stamp,
      updated_at: stamp,
    });
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'payment_link.created',
        target: { type: 'payment_link', id: inserted.uuid },
        details: { name },
      },
      stamp,
    );
    return inserted;
  });
  return presentLink(row, undefined, undefined, ctx.config.publicUrl, now);
}

export async function listLinks(ctx: AppContext, organizationId: number, environment: Environment) {
  const rows = await store.listLinks(ctx.db, organizationId, environment);
  const uuids = rows.map((row) => row.uuid);
  const now = ctx.clock();
  const [sales, uses] = await Promise.all([
    store.salesByLink(ctx.db, organizationId, uuids),
    store.usesByLink(ctx.db, organizationId, uuids, now.toISOString()),
  ]);
  return rows.map((row) =>
    presentLink(row, sales.get(row.uuid), uses.get(row.uuid), ctx.config.publicUrl, now),
  );
}

export async function getLink(ctx: AppContext, organizationId: number, id: string) {
  return present(ctx, organizationId, await existingLink(ctx, organizationId, id));
}

export async function updateLink(
  ctx: AppContext,
  organizationId: number,
  id: string,
  input: UpdateLinkInput,
  actor: Actor,
) {
  const existing = await existingLink(ctx, organizationId, id);
  for (const field of Object.keys(input)) {
    if (UPDATABLE.has(field)) continue;
    if (FIXED_AT_CREATION.has(field))
      throw new ValidationError(`${field}: cannot be changed after creation; create a new payment link.`);
    if (READ_ONLY.has(field)) throw new ValidationError(`${field}: this field is read-only.`);
    throw new ValidationError(`${field}: unknown field.`);
  }
  if (existing.deleted_at !== null) throw new ConflictError('This payment link has been deleted.');

  const changes: Updateable<PaymentLinksTable> = { updated_at: ctx.clock().toISOString() };
  if (input.name !== undefined) changes.name = cleanName(input.name);
  if (input.is_active !== undefined) changes.is_active = input.is_active ? 1 : 0;
  // A past expiry is allowed here: it is how a merchant expires a link now.
  if (input.expires_at !== undefined) changes.expires_at = normalizeExpiry(input.expires_at);
  if (input.metadata !== undefined) changes.metadata = serializeMetadata(input.metadata);

  Object.assign(changes, returnUrls(input));
  if (input.max_uses !== undefined) changes.max_uses = input.max_uses;
  const maxUses = input.max_uses;
  const row = await ctx.db.transaction().execute(async (trx) => {
    if (maxUses !== undefined && maxUses !== null) {
      // Checked against the uses counted under the row's lock, so a concurrent start cannot slip between.
      const locked = await store.lockLink(trx, existing.id);
      const now = ctx.clock().toISOString();
      const uses =
        (await store.usesByLink(trx, organizationId, [locked.uuid], now)).get(locked.uuid)?.uses ?? 0;
      if (maxUses < uses) {
        throw new ValidationError(
          `max_uses: must be at least the number of uses already held (${uses}: paid payments and open checkouts).`,
        );
      }
    }
    const updated = await store.updateLink(trx, existing.id, changes);
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'payment_link.updated',
        target: { type: 'payment_link', id: existing.uuid },
        details: { changes: input },
      },
      changes.updated_at as string,
    );
    return updated;
  });
  return present(ctx, organizationId, row);
}

export async function deleteLink(
  ctx: AppContext,
  organizationId: number,
  id: string,
  actor: Actor,
): Promise<void> {
  const existing = await existingLink(ctx, organizationId, id);
  if (existing.deleted_at !== null) return;
  const now = ctx.clock().toISOString();
  await ctx.db.transaction().execute(async (trx) => {
    await store.updateLink(trx, existing.id, { deleted_at: now, is_active: 0, updated_at: now });
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'payment_link.deleted',
        target: { type: 'payment_link', id: existing.uuid },
        details: { name: existing.name },
      },
      now,
    );
  });
}
