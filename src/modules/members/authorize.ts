// The check every dashboard-session request passes after its session is found (http/auth.ts calls it):
// the route's rule from permissions.ts against the member's role, the organization's two-factor
// requirement, and recent authentication for the sensitive actions.
import { DomainError, ForbiddenError } from '../../http/errors.ts';
import type { SessionPrincipal } from '../auth/service.ts';
import { RECENT_AUTH_MS, ruleFor } from './permissions.ts';
import { forbiddenDetail, roleAllows } from './roles.ts';

export const REAUTH_DETAIL = 'Confirm your identity to continue.';

/** 403 with `reauth_required: true`: POST /api/auth/confirm/ with the password or a code, then retry. */
export class ReauthRequiredError extends DomainError {
  constructor() {
    super(403, REAUTH_DETAIL, {}, { reauth_required: true });
  }
}

export class TwoFactorSetupRequiredError extends DomainError {
  constructor() {
    super(
      403,
      'Your organization requires two-factor authentication. Set it up in your security settings to continue.',
      {},
      { two_factor_setup_required: true },
    );
  }
}

export function isRecent(authenticatedAt: string | null, now: Date): boolean {
  return authenticatedAt !== null && now.getTime() - Date.parse(authenticatedAt) <= RECENT_AUTH_MS;
}

export function authorize(principal: SessionPrincipal, method: string, url: string, now: Date): void {
  const rule = ruleFor(method, url);
  // Unreachable for routes of the app (it does not start with a session route the table lacks).
  if (!rule) throw new ForbiddenError();
  if (principal.twoFactorSetupRequired && rule.permission !== 'account')
    throw new TwoFactorSetupRequiredError();
  if (!roleAllows(principal.role, rule.permission)) {
    throw new ForbiddenError(forbiddenDetail(principal.role, rule.permission));
  }
  if (rule.recent && !isRecent(principal.authenticatedAt, now)) throw new ReauthRequiredError();
}
