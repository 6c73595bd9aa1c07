// GET /api/organization/dashboard/: the snapshot the dashboard's overview shows.
// Each module contributes its part here as it arrives (wallet, payments). ?environment=sandbox gives
// the figures of test mode. The snapshot is open to every role, so the wallet's part (its buckets and
// recent ledger activity) is null for a role that may not read the wallet (GET /api/wallet/ refuses it).
import type { AppContext } from '../../context.ts';
import type { Environment } from '../api-keys/table.ts';
import { type Role, roleAllows } from '../members/roles.ts';
import { paymentStats } from '../payments/service.ts';
import { recentActivity, walletSummary } from '../wallet/service.ts';
import { getOrganization, presentOrganization } from './service.ts';

export async function dashboardSnapshot(
  ctx: AppContext,
  organizationId: number,
  role: Role,
  environment: Environment = 'production',
) {
  const organization = await getOrganization(ctx.db, organizationId);
  // The team as the members page lists it: removed members keep their row (for the audit trail) only.
  const users = await ctx.db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('organization_id', '=', organizationId)
    .where('removed_at', 'is', null)
    .executeTakeFirstOrThrow();
  const seesWallet = roleAllows(role, 'wallet:read');
  return {
    organization: presentOrganization(organization),
    environment,
    wallet: seesWallet ? await walletSummary(ctx.db, organizationId, environment) : null,
    stats: { user_count: Number(users.count), ...(await paymentStats(ctx.db, organizationId, environment)) },
    recent_activity: seesWallet ? await recentActivity(ctx.db, organizationId, environment, 10) : null,
  };
}
