// The scopes an API key can carry, and the parser for the dashboard's `allowed_scopes` string.
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
