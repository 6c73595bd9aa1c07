// GET /api/organization/dashboard/: the snapshot the dashboard's overview shows.
// Each module contributes its part here as it arrives (wallet, payments).
import type { AppContext } from '../../context.ts';
import { paymentStats } from '../payments/service.ts';
import { recentActivity, walletSummary } from '../wallet/service.ts';
import { getOrganization, presentOrganization } from './service.ts';

export async function dashboardSnapshot(ctx: AppContext, organizationId: number) {
  const organization = await getOrganization(ctx.db, organizationId);
  const users = await ctx.db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .where('organization_id', '=', organizationId)
    .executeTakeFirstOrThrow();
  return {
    organization: presentOrganization(organization),
    wallet: await walletSummary(ctx.db, organizationId, 'production'),
    stats: { user_count: Number(users.count), ...(await paymentStats(ctx.db, organizationId, 'production')) },
    recent_activity: await recentActivity(ctx.db, organizationId, 'production', 10),
  };
}
