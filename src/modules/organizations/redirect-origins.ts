// redirect_origins: the https origins a public payment-link start may send the customer back to. Without
// it anyone could start a merchant's link with a failedUrl on a phishing page, and the hosted page, on the
// gateway's own domain, would send the customer there.
import { ValidationError } from '../../http/errors.ts';

export const MAX_REDIRECT_ORIGINS = 20;

/** An `https://host[:port]` origin, lower-cased, or null when `value` is not exactly one. */
function httpsOrigin(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.protocol !== 'https:' || url.username || url.password) return null;
  return value.replace(/\/$/, '').toLowerCase() === url.origin ? url.origin : null;
}

/** Validates a PATCH's redirect_origins: a list of https origins (no path, query or credentials). */
export function parseRedirectOrigins(value: unknown): string[] {
  if (!Array.isArray(value)) throw new ValidationError('redirect_origins: must be a list of https origins.');
  if (value.length > MAX_REDIRECT_ORIGINS) {
    throw new ValidationError(`redirect_origins: at most ${MAX_REDIRECT_ORIGINS} origins.`);
  }
  const origins: string[] = [];
  for (const entry of value) {
    const origin = typeof entry === 'string' ? httpsOrigin(entry.trim()) : null;
    if (origin === null) {
      throw new ValidationError(
        `redirect_origins: ${JSON.stringify(entry)} is not an https://host[:port] origin (no path, query or credentials).`,
      );
    }
    if (!origins.includes(origin)) origins.push(origin);
  }
  return origins;
}

export function redirectOriginsOf(row: { redirect_origins: string }): string[] {
  return JSON.parse(row.redirect_origins) as string[];
}

/** A start's redirect URL is accepted only when its origin is one the organization listed. */
export function assertAllowedRedirect(field: string, url: string, origins: readonly string[]): void {
  let origin: string | null = null;
  try {
    origin = new URL(url).origin;
  } catch {
    // Not a URL: refused below like any other origin.
  }
  if (origin === null || !origins.includes(origin)) {
    throw new ValidationError(
      `${field}: the origin ${origin ?? url} is not one of the organization's redirect_origins.`,
    );
  }
}
