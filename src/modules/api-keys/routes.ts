// Session endpoints under /api/organization/api-keys/.
import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { NotFoundError } from '../../http/errors.ts';
import { ErrorResponse } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { parseNumericId } from '../../lib/ids.ts';
import { actorOf } from '../audit/record.ts';
import { ApiKey, ApiKeyIssued, ApiKeyList } from './schemas.ts';
import { createKey, listKeys, revokeKey, rotateKey } from './service.ts';

const Environment = Type.Union([Type.Literal('production'), Type.Literal('sandbox')]);

export async function apiKeyRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));

  app.get('/organization/api-keys/', { schema: { response: { 200: ApiKeyList } } }, async (request) =>
    listKeys(ctx, sessionOf(request).organizationId),
  );

  app.post(
    '/organization/api-keys/',
    {
      schema: {
        body: Type.Object({
          name: Type.String({ minLength: 1, maxLength: 100 }),
          allowed_scopes: Type.Optional(Type.String({ maxLength: 500 })),
          environment: Type.Optional(Environment),
        }),
        response: { 201: ApiKeyIssued },
      },
    },
    async (request, reply) => {
      const { name, allowed_scopes = '', environment } = request.body;
      const session = sessionOf(request);
      const key = await createKey(
        ctx,
        session.organizationId,
        { name, allowed_scopes, environment },
        actorOf(request),
        session.role,
      );
      return reply.code(201).send(key);
    },
  );

  app.post(
    '/organization/api-keys/rotate/',
    {
      schema: {
        body: Type.Object({ environment: Type.Optional(Environment) }),
        response: {
          200: ApiKeyIssued,
          404: ErrorResponse('The environment has no active API key to rotate: create one instead.'),
        },
      },
      // The body is optional: a bare POST rotates the production key.
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request) =>
      rotateKey(
        ctx,
        sessionOf(request).organizationId,
        request.body?.environment ?? 'production',
        actorOf(request),
        sessionOf(request).role,
      ),
  );

  app.post(
    '/organization/api-keys/:id/revoke/',
    {
      schema: {
        params: Type.Object({ id: Type.String() }),
        response: { 200: ApiKey, 404: ErrorResponse('No API key of this organization has this id.') },
      },
    },
    async (request) => {
      const id = parseNumericId(request.params.id);
      if (id === null) throw new NotFoundError('API key not found.');
      return revokeKey(ctx, sessionOf(request).organizationId, id, actorOf(request));
    },
  );
}
