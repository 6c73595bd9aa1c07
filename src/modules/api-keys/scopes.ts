// The scopes an API key can carry, the parser for the dashboard's `allowed_scopes` string, and which
// scopes a member's role may put on a key.
import { type Permission, type Role, roleAllows } from '../members/roles.ts';

export const SCOPES = [
  'checkout:create',
  'payments:read',
  'payments:write',
  'refunds:read',
  'refunds:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export class ScopeParseError extends Error {}

/**
 * "checkout:create, payments:read" → ['checkout:create', 'payments:read'].
 * Commas and/or whitespace separate; duplicates collapse; order is canonical; '' means all scopes ([]).
 */
export function parseAllowedScopes(input: string): Scope[] {
  const parts = input.split(/[\s,]+/).filter(Boolean);
  const found = new Set<Scope>();
  for (const part of parts) {
    if (!(SCOPES as readonly string[]).includes(part)) throw new ScopeParseError(`unknown scope "${part}"`);
    found.add(part as Scope);
  }
  return SCOPES.filter((scope) => found.has(scope));
}

/** Whether a key with `granted` scopes may call an endpoint that needs any one of `required`. */
export function allowsAny(granted: readonly string[], required: readonly Scope[]): boolean {
  if (granted.length === 0 || required.length === 0) return true;
  return required.some((scope) => granted.includes(scope));
}

/**
 * What a member must be allowed to do to put each scope on a key: a key does no more than its maker
 * could do from the dashboard, so a developer (API keys, webhooks, reading payments and refunds) cannot
 * refund by minting a key. `payments:write` is refunding too: the refund endpoint accepts it. Creating a
 * checkout has no dashboard action of its own; it is the integration's job, so whoever may manage keys
 * may grant it.
 */
export const SCOPE_PERMISSION: Readonly<Record<Scope, Permission>> = {
  'checkout:create': 'api_keys:write',
  'payments:read': 'payments:read',
  'payments:write': 'refunds:write',
  'refunds:read': 'refunds:read',
  'refunds:write': 'refunds:write',
};

/**
 * The first permission `role` lacks for a key with `scopes` ([] = all scopes), or null when the role may
 * grant them all.
 */
export function permissionLackedFor(role: Role, scopes: readonly Scope[]): Permission | null {
  for (const scope of scopes.length === 0 ? SCOPES : scopes) {
    if (!roleAllows(role, SCOPE_PERMISSION[scope])) return SCOPE_PERMISSION[scope];
  }
  return null;
}
