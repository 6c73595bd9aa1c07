// GET /api/organization/dashboard/: the snapshot the dashboard's overview shows.
// Each module contributes its part here as it arrives (wallet, payments). ?environment=sandbox gives
// the figures of test mode.
import type { AppContext } from '../../context.ts';
import type { Environment } from '../api-keys/table.ts';
import { paymentStats } from '../payments/service.ts';
import { recentActivity, walletSummary } from '../wallet/service.ts';
import { getOrganization, presentOrganization } from './service.ts';

export async function dashboardSnapshot(
  ctx: AppContext,
  organizationId: number,
  environment: Environment = 'production',
) {
  const organization = await getOrganization(ctx.db, organizationId);
  const users = await ctx.db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return {
    organization: presentOrganization(organization),
    environment,
    wallet: await walletSummary(ctx.db, organizationId, environment),
    stats: { user_count: Number(users.count), ...(await paymentStats(ctx.db, organizationId, environment)) },
    recent_activity: await recentActivity(ctx.db, organizationId, environment, 10),
  };
}
