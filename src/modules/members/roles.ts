// Roles and what each may do (decisions, "Merchant accounts"): owner everything; admin everything except
// members and payouts; developer API keys, webhooks, reading payments and refunds (and the catalog, whose
// product ids a checkout needs); support reads everything and refunds; viewer reads.

export const ROLES = ['owner', 'admin', 'developer', 'support', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/**
 * A permission names an area and whether it reads or changes it. `account` is the member's own account
 * (session, password, two-factor): every role has it, and it stays open when the organization requires
 * two-factor and the member has not set it up yet.
 */
export const PERMISSIONS = {
  account: { roles: ROLES, doing: 'managing your own account' },
  'organization:read': { roles: ROLES, doing: 'viewing the organization' },
  'organization:write': { roles: ['owner', 'admin'], doing: 'changing the organization profile' },
  'members:read': { roles: ROLES, doing: 'viewing the team' },
  'members:write': { roles: ['owner'], doing: 'managing members' },
  'audit:read': { roles: ['owner', 'admin', 'support', 'viewer'], doing: 'viewing the audit log' },
  'api_keys:read': { roles: ROLES, doing: 'viewing API keys' },
  'api_keys:write': { roles: ['owner', 'admin', 'developer'], doing: 'managing API keys' },
  'webhooks:read': { roles: ROLES, doing: 'viewing webhooks' },
  'webhooks:write': { roles: ['owner', 'admin', 'developer'], doing: 'changing webhooks' },
  'products:read': { roles: ROLES, doing: 'viewing products' },
  'products:write': { roles: ['owner', 'admin'], doing: 'changing products' },
  'payment_links:read': { roles: ['owner', 'admin', 'support', 'viewer'], doing: 'viewing payment links' },
  'payment_links:write': { roles: ['owner', 'admin'], doing: 'changing payment links' },
  'payments:read': { roles: ROLES, doing: 'viewing payments' },
  'subscriptions:read': {
    roles: ['owner', 'admin', 'support', 'viewer'],
    doing: 'viewing subscriptions',
  },
  'subscriptions:write': { roles: ['owner', 'admin'], doing: 'changing subscriptions' },
  'refunds:read': { roles: ROLES, doing: 'viewing refunds' },
  'refunds:write': { roles: ['owner', 'admin', 'support'], doing: 'refunding payments' },
  'wallet:read': { roles: ['owner', 'admin', 'support', 'viewer'], doing: 'viewing the wallet' },
  'payouts:read': { roles: ['owner', 'admin', 'support', 'viewer'], doing: 'viewing payouts' },
  'payouts:write': { roles: ['owner'], doing: 'requesting payouts' },
} as const satisfies Record<string, { roles: readonly Role[]; doing: string }>;

export type Permission = keyof typeof PERMISSIONS;

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

export function roleAllows(role: Role, permission: Permission): boolean {
  return (PERMISSIONS[permission].roles as readonly Role[]).includes(role);
}

/** The 403 detail: "Your role (viewer) does not allow managing API keys." */
export function forbiddenDetail(role: Role, permission: Permission): string {
  return `Your role (${role}) does not allow ${PERMISSIONS[permission].doing}.`;
}
