// The one table of what each dashboard-session route needs: a permission (roles.ts says which roles hold
// it) and, for the sensitive actions of the decisions, recent authentication (a login or POST
// /api/auth/confirm/ within the last 10 minutes). sessionAuth enforces it on every request, the OpenAPI
// document shows it (x-kassa-permission and a line in the description), and the per-role e2e test is
// generated from it. A session route missing here stops the app from starting.
//
// Adding a session route: one line below, keyed by the method and the route's URL as Fastify registers
// it (with the /api prefix and :params), e.g. 'GET /api/subscriptions/:id/': read('payments:read').
import type { Permission } from './roles.ts';

export interface RouteRule {
  permission: Permission;
  /** Needs a login or an identity confirmation within RECENT_AUTH_MS. */
  recent: boolean;
}

export const RECENT_AUTH_MS = 10 * 60 * 1000;

const allow = (permission: Permission): RouteRule => ({ permission, recent: false });
const allowRecent = (permission: Permission): RouteRule => ({ permission, recent: true });

export const SESSION_ROUTES: Readonly<Record<string, RouteRule>> = {
  // The member's own account.
  'POST /api/auth/logout/': allow('account'),
  'GET /api/auth/me/': allow('account'),
  'POST /api/auth/confirm/': allow('account'),
  'GET /api/auth/sessions/': allow('account'),
  'DELETE /api/auth/sessions/:id/': allow('account'),
  'POST /api/auth/password/': allow('account'),
  'POST /api/auth/2fa/setup/': allow('account'),
  'POST /api/auth/2fa/enable/': allowRecent('account'),
  'POST /api/auth/2fa/disable/': allowRecent('account'),
  'POST /api/auth/2fa/recovery-codes/': allowRecent('account'),

  // Organization.
  'GET /api/organization/': allow('organization:read'),
  'PATCH /api/organization/': allow('organization:write'),
  'GET /api/organization/dashboard/': allow('organization:read'),
  'GET /api/organization/events/': allow('payments:read'),
  'GET /api/organization/audit-log/': allow('audit:read'),

  // Team.
  'GET /api/organization/members/': allow('members:read'),
  'POST /api/organization/members/': allowRecent('members:write'),
  'PATCH /api/organization/members/:id/': allowRecent('members:write'),
  'DELETE /api/organization/members/:id/': allowRecent('members:write'),
  'DELETE /api/organization/invitations/:id/': allowRecent('members:write'),
  'GET /api/organization/security/': allow('members:read'),
  'PUT /api/organization/security/': allowRecent('members:write'),

  // API keys.
  'GET /api/organization/api-keys/': allow('api_keys:read'),
  'POST /api/organization/api-keys/': allowRecent('api_keys:write'),
  'POST /api/organization/api-keys/rotate/': allowRecent('api_keys:write'),
  'POST /api/organization/api-keys/:id/revoke/': allow('api_keys:write'),

  // Webhooks.
  'GET /api/organization/webhook/': allow('webhooks:read'),
  'PUT /api/organization/webhook/': allowRecent('webhooks:write'),
  'POST /api/organization/webhook/rotate/': allowRecent('webhooks:write'),
  'POST /api/organization/webhook/test/': allow('webhooks:write'),
  'POST /api/organization/webhook/test-transaction/': allow('webhooks:write'),
  'GET /api/organization/webhook/deliveries/': allow('webhooks:read'),
  'GET /api/organization/webhook/deliveries/:id/': allow('webhooks:read'),
  'POST /api/organization/webhook/deliveries/:id/redeliver/': allow('webhooks:write'),
  'GET /api/organization/webhook/received/': allow('webhooks:read'),

  // Catalog and payment links.
  'GET /api/products/': allow('products:read'),
  'POST /api/products/': allow('products:write'),
  'GET /api/products/:id/': allow('products:read'),
  'PATCH /api/products/:id/': allow('products:write'),
  'DELETE /api/products/:id/': allow('products:write'),
  'GET /api/subscriptions/plans/': allow('subscriptions:read'),
  'POST /api/subscriptions/plans/': allow('subscriptions:write'),
  'GET /api/subscriptions/plans/:id/': allow('subscriptions:read'),
  'PATCH /api/subscriptions/plans/:id/': allow('subscriptions:write'),
  'GET /api/subscriptions/': allow('subscriptions:read'),
  'GET /api/subscriptions/:id/': allow('subscriptions:read'),
  'POST /api/subscriptions/:id/cancel/': allow('subscriptions:write'),
  'POST /api/subscriptions/:id/advance-clock/': allow('subscriptions:write'),
  'POST /api/subscriptions/:id/update-card-link/': allow('subscriptions:write'),
  'GET /api/payment-links/': allow('payment_links:read'),
  'POST /api/payment-links/': allow('payment_links:write'),
  'GET /api/payment-links/:id/': allow('payment_links:read'),
  'PATCH /api/payment-links/:id/': allow('payment_links:write'),
  'DELETE /api/payment-links/:id/': allow('payment_links:write'),
  'GET /api/payment-links/:id/payments/': allow('payment_links:read'),

  // Payments, refunds, wallet, payouts.
  'GET /api/payments/': allow('payments:read'),
  'GET /api/payments/:id/': allow('payments:read'),
  'GET /api/organization/refunds/': allow('refunds:read'),
  'POST /api/refunds/verification-code/': allow('refunds:write'),
  'POST /api/refunds/': allow('refunds:write'),
  'GET /api/wallet/': allow('wallet:read'),
  'GET /api/payouts/': allow('payouts:read'),
  'POST /api/payouts/': allowRecent('payouts:write'),
  // Where the money goes: changing it needs recent authentication.
  'GET /api/payouts/destination/': allow('payouts:read'),
  'PUT /api/payouts/destination/': allowRecent('payouts:write'),
  'DELETE /api/payouts/destination/': allowRecent('payouts:write'),

  // Which provider production runs on (the dashboard's simulated-production banner).
  'GET /api/provider/status/': allow('organization:read'),

  // Dashboard day two: exports, search, the development mailbox.
  'GET /api/exports/payments/': allow('payments:read'),
  'GET /api/exports/refunds/': allow('refunds:read'),
  'GET /api/exports/payouts/': allow('payouts:read'),
  'GET /api/exports/wallet/': allow('wallet:read'),
  'GET /api/search/': allow('payments:read'),
  // The development mailbox holds every member's reset and invitation links: owners only.
  'GET /api/dev/mail/': allow('members:write'),
  'GET /api/dev/mail/:id/': allow('members:write'),
};

/** The rule of a session route (HEAD is its GET), or undefined when the table has none. */
export function ruleFor(method: string, url: string): RouteRule | undefined {
  return SESSION_ROUTES[`${method === 'HEAD' ? 'GET' : method} ${url}`];
}

/** Throws at start-up for a session route the table does not name. */
export function requireRule(method: string, url: string): RouteRule {
  const rule = ruleFor(method, url);
  if (!rule) {
    throw new Error(
      `The session route ${method} ${url} has no permission: add it to SESSION_ROUTES in src/modules/members/permissions.ts.`,
    );
  }
  return rule;
}
