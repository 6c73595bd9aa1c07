// The catalog: products a merchant sells, priced in minor units of one currency.
// Checkout and payment links read them through `findSellableProducts`.

import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { isPublicId, newPublicId } from '../../lib/ids.ts';
import { formatAmount, MoneyFormatError, parseAmount, toBigInt } from '../../lib/money.ts';
import { type Actor, recordAudit } from '../audit/record.ts';
import type { ProductRow } from './table.ts';

export function presentProduct(row: ProductRow) {
  return {
    id: row.public_id,
    name: row.name,
    description: row.description,
    unit_price: formatAmount(toBigInt(row.unit_price)),
    currency: row.currency,
    is_active: row.is_active === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export function parsePrice(field: string, value: unknown): bigint {
  let amount: bigint;
  try {
    amount = parseAmount(value);
  } catch (error) {
    if (error instanceof MoneyFormatError) throw new ValidationError(`${field}: ${error.message}.`);
    throw error;
  }
  if (amount <= 0n) throw new ValidationError(`${field}: must be greater than 0.`);
  return amount;
}

export interface ProductInput {
  name?: string;
  description?: string;
  unit_price?: string | number;
  currency?: 'USD' | 'EUR';
  is_active?: boolean;
}

/** A name with its surrounding blanks removed; a blank one is a 400. */
export function cleanName(name: string): string {
  const trimmed = name.trim();
  if (!trimmed) throw new ValidationError('name: may not be blank.');
  return trimmed;
}

async function findProduct(db: Executor, organizationId: number, publicId: string) {
  if (!isPublicId('product', publicId)) return undefined;
  return db
    .selectFrom('products')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('public_id', '=', publicId)
    .where('deleted_at', 'is', null)
    .executeTakeFirst();
}

export async function listProducts(ctx: AppContext, organizationId: number) {
  const rows = await ctx.db
    .selectFrom('products')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('deleted_at', 'is', null)
    .orderBy('id', 'desc')
    .execute();
  return rows.map(presentProduct);
}

export async function getProduct(ctx: AppContext, organizationId: number, publicId: string) {
  const row = await findProduct(ctx.db, organizationId, publicId);
  if (!row) throw new NotFoundError('Product not found.');
  return presentProduct(row);
}

export async function createProduct(
  ctx: AppContext,
  organizationId: number,
  input: Required<Pick<ProductInput, 'name' | 'unit_price'>> & ProductInput,
  actor: Actor,
) {
  const now = ctx.clock().toISOString();
  const row = await ctx.db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto('products')
      .values({
        public_id: newPublicId('product'),
        organization_id: organizationId,
        name: cleanName(input.name),
        description: input.description?.trim() ?? '',
        unit_price: Number(parsePrice('unit_price', input.unit_price)),
        currency: input.currency ?? 'USD',
        is_active: input.is_active === false ? 0 : 1,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'product.created',
        target: { type: 'product', id: inserted.public_id },
        details: { name: inserted.name },
      },
      now,
    );
    return inserted;
  });
  return presentProduct(row);
}

export async function updateProduct(
  ctx: AppContext,
  organizationId: number,
  publicId: string,
  input: ProductInput,
  actor: Actor,
) {
  const existing = await findProduct(ctx.db, organizationId, publicId);
  if (!existing) throw new NotFoundError('Product not found.');
  const changes: Partial<ProductRow> = {};
  if (input.name !== undefined) changes.name = cleanName(input.name);
  if (input.description !== undefined) changes.description = input.description.trim();
  if (input.unit_price !== undefined) changes.unit_price = Number(parsePrice('unit_price', input.unit_price));
  if (input.currency !== undefined) changes.currency = input.currency;
  if (input.is_active !== undefined) changes.is_active = input.is_active ? 1 : 0;
  const now = ctx.clock().toISOString();
  const row = await ctx.db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('products')
      .set({ ...changes, updated_at: now })
      .where('id', '=', existing.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'product.updated',
        target: { type: 'product', id: existing.public_id },
        details: { changes: input },
      },
      now,
    );
    return updated;
  });
  return presentProduct(row);
}

export async function deleteProduct(ctx: AppContext, organizationId: number, publicId: string, actor: Actor) {
  const existing = await findProduct(ctx.db, organizationId, publicId);
  if (!existing) throw new NotFoundError('Product not found.');
  const now = ctx.clock().toISOString();
  await ctx.db.transaction().execute(async (trx) => {
    await trx
      .updateTable('products')
      .set({ deleted_at: now, is_active: 0, updated_at: now })
      .where('id', '=', existing.id)
      .execute();
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'product.deleted',
        target: { type: 'product', id: existing.public_id },
        details: { name: existing.name },
      },
      now,
    );
  });
}

/**
 * The catalog products a checkout or link may sell: of this organization, active, not deleted, in `currency`.
 * Any other id is a 400 that names it.
 */
export async function findSellableProducts(
  db: Executor,
  organizationId: number,
  ids: string[],
  currency: string,
) {
  const unique = [...new Set(ids)];
  const rows = unique.length
    ? await db
        .selectFrom('products')
        .selectAll()
        .where('organization_id', '=', organizationId)
        .where('public_id', 'in', unique)
        .where('deleted_at', 'is', null)
        .execute()
    : [];
  const byId = new Map(rows.map((row) => [row.public_id, row]));
  for (const id of unique) {
    const row = byId.get(id);
    if (!row) throw new ValidationError(`products: unknown product id "${id}".`);
    if (row.is_active !== 1) throw new ValidationError(`products: product "${id}" is not active.`);
    if (row.currency !== currency) {
      throw new ValidationError(`products: product "${id}" is priced in ${row.currency}, not ${currency}.`);
    }
  }
  return byId;
}
