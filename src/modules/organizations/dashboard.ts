// GET /api/organization/dashboard/: the snapshot the dashboard's overview shows.
// Each module contributes its part here as it arrives (wallet, payments).
import type { AppContext } from '../../context.ts';
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
    wallet: { currency: 'USD', balance: '0.00', reserve: '0.00', held: '0.00', available: '0.00' },
    stats: { user_count: Number(users.count), transaction_count: 0 },
    recent_activity: [] as unknown[],
  };
}
