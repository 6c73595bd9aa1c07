// API key queries; every lookup but the authenticating one is scoped by organization.
import type { Executor } from '../../db/database.ts';
import { prepareQuery } from '../../db/prepared.ts';
import type { OrganizationTerms } from '../checkout/store.ts';
import type { Environment } from './table.ts';

/** The authenticating lookup of every API-key request (prepared: it is the hottest query there is). */
const byHash = prepareQuery(1, (db, keyHash: string) =>
  db
    .selectFrom('api_keys')
    .select(['id', 'organization_id', 'environment', 'scopes', 'status', 'last_used_at'])
    .where('key_hash', '=', keyHash),
);

export function findByHash(db: Executor, keyHash: string) {
  return byHash.first(db, keyHash);
}

/**
 * The same lookup with the organization's checkout terms (pricing and limits) joined on its primary key:
 * checkout creation reads them in this statement instead of a second one.
 */
const byHashWithTerms = prepareQuery(1, (db, keyHash: string) =>
  db
    .selectFrom('api_keys')
    .innerJoin('organizations', 'organizations.id', 'api_keys.organization_id')
    .select([
      'api_keys.id',
      'api_keys.organization_id',
      'api_keys.environment',
      'api_keys.scopes',
      'api_keys.status',
      'api_keys.last_used_at',
      'organizations.name as terms_name',
      'organizations.website as terms_website',
      'organizations.status as terms_status',
      'organizations.price_mode as terms_price_mode',
      'organizations.fee_bp as terms_fee_bp',
      'organizations.tax_rate_bp as terms_tax_rate_bp',
      'organizations.min_payment as terms_min_payment',
      'organizations.max_payment as terms_max_payment',
    ])
    .where('api_keys.key_hash', '=', keyHash),
);

export async function findByHashWithTerms(db: Executor, keyHash: string) {
  const row = await byHashWithTerms.first(db, keyHash);
  if (!row) return undefined;
  const {
    terms_name,
    terms_website,
    terms_status,
    terms_price_mode,
    terms_fee_bp,
    terms_tax_rate_bp,
    terms_min_payment,
    terms_max_payment,
    ...key
  } = row;
  const terms: OrganizationTerms = {
    name: terms_name,
    website: terms_website,
    status: terms_status,
    price_mode: terms_price_mode,
    fee_bp: terms_fee_bp,
    tax_rate_bp: terms_tax_rate_bp,
    min_payment: terms_min_payment,
    max_payment: terms_max_payment,
  };
  return { ...key, terms };
}

/** The key's status (null when there is no such key). */
export async function keyStatus(db: Executor, id: number): Promise<string | null> {
  const row = await db.selectFrom('api_keys').select('status').where('id', '=', id).executeTakeFirst();
  return row?.status ?? null;
}

/** Records the key's use (once a minute); false when the key is no longer active (revoked, rotated away). */
export async function touchActiveKey(db: Executor, id: number, now: string): Promise<boolean> {
  const result = await db
    .updateTable('api_keys')
    .set({ last_used_at: now })
    .where('id', '=', id)
    .where('status', '=', 'active')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export function listKeys(db: Executor, organizationId: number) {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .orderBy('id', 'desc')
    .execute();
}

export function findKey(db: Executor, organizationId: number, id: number) {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .executeTakeFirst();
}

export function activeKeys(db: Executor, organizationId: number, environment: Environment) {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment)
    .where('status', '=', 'active')
    .orderBy('id', 'desc')
    .execute();
}

export function insertKey(
  db: Executor,
  values: {
    organizationId: number;
    name: string;
    prefix: string;
    keyHash: string;
    scopes: string;
    environment: Environment;
    now: string;
  },
) {
  return db
    .insertInto('api_keys')
    .values({
      organization_id: values.organizationId,
      name: values.name,
      prefix: values.prefix,
      key_hash: values.keyHash,
      scopes: values.scopes,
      environment: values.environment,
      status: 'active',
      created_at: values.now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function revokeKey(db: Executor, organizationId: number, id: number, now: string) {
  return db
    .updateTable('api_keys')
    .set({ status: 'revoked', revoked_at: now })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', 'active')
    .execute();
}
