// API keys: issue (raw key shown once), rotate, revoke, and authenticate by SHA-256 hash.
import type { AppContext } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from '../../http/errors.ts';
import { randomBase62, sha256Hex } from '../../lib/ids.ts';
import { type Actor, recordAudit } from '../audit/record.ts';
import type { OrganizationTerms } from '../checkout/store.ts';
import { forbiddenDetail, type Role } from '../members/roles.ts';
import { cachedKey, forgetKey, rememberKey } from './cache.ts';
import {
  allowsAny,
  parseAllowedScopes,
  permissionLackedFor,
  SCOPES,
  type Scope,
  ScopeParseError,
} from './scopes.ts';
import * as store from './store.ts';
import type { ApiKeyRow, Environment } from './table.ts';

const TOUCH_INTERVAL_MS = 60 * 1000;

export interface ApiKeyPrincipal {
  kind: 'api_key';
  keyId: number;
  organizationId: number;
  environment: Environment;
  scopes: string[];
  /** The organization's checkout terms, read with the key when the route asked for them (else null). */
  terms: OrganizationTerms | null;
  /**
   * null: the key was looked up and found active for this request. Else the key's hash: it came from
   * this process's cache, and the route must check its status in its statement (assertKeyStillActive).
   */
  unverified: string | null;
}

export function presentKey(row: ApiKeyRow) {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: row.scopes ? row.scopes.split(' ') : [],
    environment: row.environment,
    status: row.status,
    created_at: row.created_at,
    last_used_at: row.last_used_at,
    revoked_at: row.revoked_at,
  };
}

/**
 * Thrown by a route's statement that found the key it was served from the cache, or the terms it was
 * served with, no longer holding; nothing was written. The route looks the key up (lookUpCachedKey).
 */
export class CachedKeyNotConfirmed extends Error {
  constructor() {
    super('The cached API key or its terms changed.');
  }
}

export function generateRawKey(environment: Environment): string {
  return `${environment === 'production' ? 'kassa_live_' : 'kassa_test_'}${randomBase62(40)}`;
}

export interface AuthenticateOptions {
  /** Read the organization's checkout terms with the key (the principal's `terms`). */
  terms?: boolean;
  /**
   * The route checks the key's status in its own statement (`ApiKeyPrincipal.unverified`): a key this
   * process authenticated before may then be served from its cache, when this says so for its id.
   */
  deferTo?: (keyId: number) => boolean;
}

function allowedHere(
  key: { environment: Environment; scopes: string | null },
  basePath: Environment,
  required: readonly Scope[],
): boolean {
  return key.environment === basePath && allowsAny(key.scopes ? key.scopes.split(' ') : [], required);
}

function dueForTouch(lastUsedAt: string | null, now: Date): boolean {
  return !lastUsedAt || now.getTime() - Date.parse(lastUsedAt) > TOUCH_INTERVAL_MS;
}

export async function authenticateApiKey(
  ctx: AppContext,
  rawKey: string,
  basePath: Environment,
  required: readonly Scope[],
  options: AuthenticateOptions = {},
): Promise<ApiKeyPrincipal> {
  if (!/^kassa_(live|test)_[0-9A-Za-z]{40}$/.test(rawKey)) throw new UnauthorizedError('Invalid API key.');
  return authenticateHash(ctx, sha256Hex(rawKey), basePath, required, options);
}

/**
 * A principal served from the cache whose route could not confirm it in its own statement (the key or
 * the terms it was served with changed, or the request was refused before that statement ran): the key
 * is forgotten and looked up, and the route answers from what the lookup read.
 */
export function lookUpCachedKey(
  ctx: AppContext,
  principal: ApiKeyPrincipal,
  required: readonly Scope[],
  options: Pick<AuthenticateOptions, 'terms'> = {},
): Promise<ApiKeyPrincipal> {
  if (principal.unverified === null) return Promise.resolve(principal);
  forgetKey(ctx, principal.unverified);
  // Never served from the cache, but remembered again with what the lookup read (the new terms).
  return authenticateHash(ctx, principal.unverified, principal.environment, required, {
    ...options,
    deferTo: () => false,
  });
}

async function authenticateHash(
  ctx: AppContext,
  hash: string,
  basePath: Environment,
  required: readonly Scope[],
  options: AuthenticateOptions,
): Promise<ApiKeyPrincipal> {
  const now = ctx.clock();
  // From the cache only when every check passes on what cannot change; else the full lookup answers.
  // A route that needs the terms is served only by an entry that holds them.
  const cached = options.deferTo ? cachedKey(ctx, hash) : undefined;
  if (
    cached &&
    (!options.terms || cached.terms !== null) &&
    options.deferTo?.(cached.id) &&
    allowedHere(cached, basePath, required)
  ) {
    if (dueForTouch(cached.last_used_at, now)) {
      // The touch is conditional on the key being active: a key revoked meanwhile is refused here.
      if (!(await store.touchActiveKey(ctx.db, cached.id, now.toISOString()))) {
        forgetKey(ctx, hash);
        throw new UnauthorizedError('Invalid API key.');
      }
      cached.last_used_at = now.toISOString();
    }
    return {
      kind: 'api_key',
      keyId: cached.id,
      organizationId: cached.organization_id,
      environment: cached.environment,
      scopes: cached.scopes ? cached.scopes.split(' ') : [],
      terms: options.terms ? cached.terms : null,
      unverified: hash,
    };
  }
  const row: (Awaited<ReturnType<typeof store.findByHash>> & { terms?: OrganizationTerms }) | undefined =
    options.terms ? await store.findByHashWithTerms(ctx.db, hash) : await store.findByHash(ctx.db, hash);
  if (!row || row.status !== 'active') {
    forgetKey(ctx, hash);
    throw new UnauthorizedError('Invalid API key.');
  }
  if (row.environment !== basePath) {
    throw new UnauthorizedError(
      row.environment === 'sandbox'
        ? 'This is a sandbox API key; use it on the sandbox base path /sandbox/api/.'
        : 'This is a production API key; use it on the production base path /api/.',
    );
  }
  const scopes = row.scopes ? row.scopes.split(' ') : [];
  if (!allowsAny(scopes, required)) {
    throw new ForbiddenError(`This API key lacks the required scope: ${required.join(' or ')}.`);
  }
  let lastUsedAt = row.last_used_at;
  if (dueForTouch(lastUsedAt, now)) {
    lastUsedAt = now.toISOString();
    await store.touchActiveKey(ctx.db, row.id, lastUsedAt);
  }
  if (options.deferTo) {
    const { id, organization_id, environment } = row;
    rememberKey(ctx, hash, {
      id,
      organization_id,
      environment,
      scopes: row.scopes,
      last_used_at: lastUsedAt,
      terms: row.terms ?? null,
    });
  }
  return {
    kind: 'api_key',
    keyId: row.id,
    organizationId: row.organization_id,
    environment: row.environment,
    scopes,
    terms: row.terms ?? null,
    unverified: null,
  };
}

/**
 * For a route that checks the key in its own statement: `status` is what that statement read. A key
 * served from the cache that is no longer active is forgotten and refused, as the lookup would refuse it.
 */
export function assertKeyStillActive(
  ctx: AppContext,
  principal: ApiKeyPrincipal,
  status: string | null,
): void {
  if (principal.unverified === null || status === 'active') return;
  forgetKey(ctx, principal.unverified);
  throw new UnauthorizedError('Invalid API key.');
}

/** Serialises key changes of one organization: a row lock on PostgreSQL, the single writer on SQLite. */
async function lockOrganization(trx: Executor, organizationId: number) {
  const query = trx
    .selectFrom('organizations')
    .select(['id', 'max_active_api_keys'])
    .where('id', '=', organizationId);
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirstOrThrow();
}

/**
 * Who is issuing a key: a member's role, or null for the operator (the CLI), who is not a member and
 * holds every right. A member may issue only a key whose scopes their role could use itself
 * (SCOPE_PERMISSION); else 403 with the role's refusal, the same sentence the route table gives.
 */
export type Grantor = Role | null;

function assertMayGrant(grantor: Grantor, scopes: readonly Scope[]): void {
  if (grantor === null) return;
  const lacked = permissionLackedFor(grantor, scopes);
  if (lacked) throw new ForbiddenError(forbiddenDetail(grantor, lacked));
}

function storedScopes(scopes: string): Scope[] {
  return scopes
    ? (scopes.split(' ').filter((scope) => (SCOPES as readonly string[]).includes(scope)) as Scope[])
    : [];
}

function parseScopes(allowedScopes: string): Scope[] {
  try {
    return parseAllowedScopes(allowedScopes);
  } catch (error) {
    if (error instanceof ScopeParseError) throw new ValidationError(`allowed_scopes: ${error.message}.`);
    throw error;
  }
}

async function issue(
  trx: Executor,
  ctx: AppContext,
  organizationId: number,
  name: string,
  scopes: string,
  environment: Environment,
) {
  const rawKey = generateRawKey(environment);
  const row = await store.insertKey(trx, {
    organizationId,
    name,
    prefix: rawKey.slice(0, 16),
    keyHash: sha256Hex(rawKey),
    scopes,
    environment,
    now: ctx.clock().toISOString(),
  });
  return { ...presentKey(row), raw_key: rawKey };
}

export async function createKey(
  ctx: AppContext,
  organizationId: number,
  input: { name: string; allowed_scopes: string; environment?: Environment },
  actor: Actor,
  grantor: Grantor,
) {
  const name = input.name.trim();
  if (!name) throw new ValidationError('name: may not be blank.');
  const parsed = parseScopes(input.allowed_scopes);
  assertMayGrant(grantor, parsed);
  const scopes = parsed.join(' ');
  const environment = input.environment ?? 'production';
  return ctx.db.transaction().execute(async (trx) => {
    const organization = await lockOrganization(trx, organizationId);
    const active = await store.activeKeys(trx, organizationId, environment);
    if (active.length >= organization.max_active_api_keys) {
      throw new ValidationError('An active API key already exists for this environment. Rotate it instead.');
    }
    const key = await issue(trx, ctx, organizationId, name, scopes, environment);
    await recordAudit(
      trx,
      organizationId,
      actor,
      { action: 'api_key.created', target: { type: 'api_key', id: key.id }, details: keyDetails(key) },
      key.created_at,
    );
    return key;
  });
}

function keyDetails(key: { name: string; prefix: string; environment: string; scopes: string[] }) {
  return { name: key.name, prefix: key.prefix, environment: key.environment, scopes: key.scopes };
}

export async function rotateKey(
  ctx: AppContext,
  organizationId: number,
  environment: Environment,
  actor: Actor,
  grantor: Grantor,
) {
  return ctx.db.transaction().execute(async (trx) => {
    await lockOrganization(trx, organizationId);
    const [current] = await store.activeKeys(trx, organizationId, environment);
    if (!current)
      throw new NotFoundError(`There is no active ${environment} API key to rotate; create one instead.`);
    // The new key carries the old one's scopes, so rotating is issuing them again: a member whose role
    // could not create this key (an all-scope key, for a developer) cannot rotate it either, and the
    // old key stays active. They may revoke it and create a narrower one, or ask an owner or admin.
    assertMayGrant(grantor, storedScopes(current.scopes));
    await store.revokeKey(trx, organizationId, current.id, ctx.clock().toISOString());
    const key = await issue(trx, ctx, organizationId, current.name, current.scopes, environment);
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'api_key.rotated',
        target: { type: 'api_key', id: key.id },
        details: { ...keyDetails(key), replaced_key_id: current.id, replaced_prefix: current.prefix },
      },
      key.created_at,
    );
    return key;
  });
}

export async function revokeKey(ctx: AppContext, organizationId: number, id: number, actor: Actor) {
  const now = ctx.clock().toISOString();
  return ctx.db.transaction().execute(async (trx) => {
    const revoked = await store.revokeKey(trx, organizationId, id, now);
    const row = await store.findKey(trx, organizationId, id);
    if (!row) throw new NotFoundError('API key not found.');
    const key = presentKey(row);
    if (Number(revoked[0]?.numUpdatedRows ?? 0) > 0) {
      await recordAudit(
        trx,
        organizationId,
        actor,
        { action: 'api_key.revoked', target: { type: 'api_key', id }, details: keyDetails(key) },
        now,
      );
    }
    return key;
  });
}

export async function listKeys(ctx: AppContext, organizationId: number) {
  return (await store.listKeys(ctx.db, organizationId)).map(presentKey);
}
