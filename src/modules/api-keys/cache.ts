// Authenticated API keys remembered by this process, by the SHA-256 of the raw key: what never changes
// about a key (its id, organization, environment and scopes) and when it was last touched. Only a route
// whose own statement checks the key's status may use an entry (`deferTo` in service.ts): such a route
// reads the status with its data, in one statement, and refuses the request if the key is no longer
// active, so a revocation or rotation made by any process is refused at once here too. Every other route
// looks the key up as before. No raw key is kept. An entry made by checkout creation's lookup also keeps
// the organization's checkout terms it read; checkout's insert is conditional on them being unchanged.
import type { AppContext } from '../../context.ts';
import type { OrganizationTerms } from '../checkout/store.ts';
import type { Environment } from './table.ts';

export interface CachedKey {
  id: number;
  organization_id: number;
  environment: Environment;
  scopes: string | null;
  last_used_at: string | null;
  /** The organization's checkout terms, when the lookup that made this entry read them (else null). */
  terms: OrganizationTerms | null;
}

/** Beyond this many keys the process forgets them all and starts again (memory stays bounded). */
const MAX_KEYS = 10_000;

const caches = new WeakMap<AppContext, Map<string, CachedKey>>();

function cacheOf(ctx: AppContext): Map<string, CachedKey> {
  let cache = caches.get(ctx);
  if (!cache) {
    cache = new Map();
    caches.set(ctx, cache);
  }
  return cache;
}

export function cachedKey(ctx: AppContext, hash: string): CachedKey | undefined {
  return cacheOf(ctx).get(hash);
}

export function rememberKey(ctx: AppContext, hash: string, key: CachedKey): void {
  const cache = cacheOf(ctx);
  if (!cache.has(hash) && cache.size >= MAX_KEYS) cache.clear();
  cache.set(hash, key);
}

export function forgetKey(ctx: AppContext, hash: string): void {
  cacheOf(ctx).delete(hash);
}
