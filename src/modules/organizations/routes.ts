// GET/PATCH /api/organization/, GET /api/organization/dashboard/.

import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { actorOf } from '../audit/record.ts';
import { dashboardSnapshot } from './dashboard.ts';
import { DashboardSnapshot, EnvironmentQuery, Organization } from './schemas.ts';
import { getOrganization, presentOrganization, updateOrganization } from './service.ts';

export async function organizationRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));

  app.get('/organization/', { schema: { response: { 200: Organization } } }, async (request) =>
    presentOrganization(await getOrganization(ctx.db, sessionOf(request).organizationId)),
  );

  app.patch(
    '/organization/',
    { schema: { body: Type.Record(Type.String(), Type.Unknown()), response: { 200: Organization } } },
    async (request) =>
      updateOrganization(ctx, sessionOf(request).organizationId, request.body, actorOf(request)),
  );

  app.get(
    '/organization/dashboard/',
    { schema: { querystring: EnvironmentQuery, response: { 200: DashboardSnapshot } } },
    async (request) => {
      const session = sessionOf(request);
      return dashboardSnapshot(
        ctx,
        session.organizationId,
        session.role,
        request.query.environment ?? 'production',
      );
    },
  );
}
