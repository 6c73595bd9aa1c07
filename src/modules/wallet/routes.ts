// Session endpoint GET /api/wallet/ (?environment=sandbox for the sandbox wallet).
import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { Wallet } from './schemas.ts';
import { walletView } from './service.ts';

export const EnvironmentQuery = Type.Object(
  { environment: Type.Optional(Type.Union([Type.Literal('production'), Type.Literal('sandbox')])) },
  { additionalProperties: false },
);

export async function walletRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));

  app.get(
    '/wallet/',
    { schema: { querystring: EnvironmentQuery, response: { 200: Wallet } } },
    async (request) =>
      walletView(ctx.db, sessionOf(request).organizationId, request.query.environment ?? 'production'),
  );
}
