// API key queries; every lookup but the authenticating one is scoped by organization.
import type { Executor } from '../../db/database.ts';
import { prepareQuery } from '../../db/prepared.ts';
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

export function touchLastUsed(db: Executor, id: number, now: string) {
  return db.updateTable('api_keys').set({ last_used_at: now }).where('id', '=', id).execute();
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
