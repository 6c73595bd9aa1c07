// Team endpoints under /api/organization/ (members, invitations, security) and the public
// POST /api/auth/accept-invite/. Who may call what is in permissions.ts.
import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { NotFoundError } from '../../http/errors.ts';
import { checksPasswords, IdParam, NoContent } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { parseNumericId } from '../../lib/ids.ts';
import { actorOf, clientOf } from '../audit/record.ts';
import { setSessionCookie } from '../auth/cookie.ts';
import { LoginResult } from '../auth/schemas.ts';
import {
  AcceptInviteBody,
  Invitation,
  InviteBody,
  Member,
  MemberList,
  RoleBody,
  Security,
} from './schemas.ts';
import {
  acceptInvitation,
  changeRole,
  getSecurity,
  inviteMember,
  listMembers,
  removeMember,
  revokeInvitation,
  setSecurity,
} from './service.ts';

function idOf(params: { id: string }, what: string): number {
  const id = parseNumericId(params.id);
  if (id === null) throw new NotFoundError(`${what} not found.`);
  return id;
}

export async function memberRoutes(app: App, { ctx }: RouteOptions) {
  const requireSession = sessionAuth(ctx);
  const org = (request: Parameters<typeof sessionOf>[0]) => sessionOf(request).organizationId;

  app.get(
    '/organization/members/',
    { preValidation: requireSession, schema: { response: { 200: MemberList } } },
    async (request) => listMembers(ctx, org(request)),
  );

  app.post(
    '/organization/members/',
    { preValidation: requireSession, schema: { body: InviteBody, response: { 201: Invitation } } },
    async (request, reply) =>
      reply.code(201).send(await inviteMember(ctx, org(request), request.body, actorOf(request))),
  );

  app.patch(
    '/organization/members/:id/',
    { preValidation: requireSession, schema: { params: IdParam, body: RoleBody, response: { 200: Member } } },
    async (request) =>
      changeRole(ctx, org(request), idOf(request.params, 'Member'), request.body.role, actorOf(request)),
  );

  app.delete(
    '/organization/members/:id/',
    { preValidation: requireSession, schema: { params: IdParam, response: { 204: NoContent } } },
    async (request, reply) => {
      await removeMember(ctx, org(request), idOf(request.params, 'Member'), actorOf(request));
      return reply.code(204).send();
    },
  );

  app.delete(
    '/organization/invitations/:id/',
    { preValidation: requireSession, schema: { params: IdParam, response: { 204: NoContent } } },
    async (request, reply) => {
      await revokeInvitation(ctx, org(request), idOf(request.params, 'Invitation'), actorOf(request));
      return reply.code(204).send();
    },
  );

  app.get(
    '/organization/security/',
    { preValidation: requireSession, schema: { response: { 200: Security } } },
    async (request) => getSecurity(ctx, org(request)),
  );

  app.put(
    '/organization/security/',
    {
      preValidation: requireSession,
      schema: { body: Type.Object({ require_two_factor: Type.Boolean() }), response: { 200: Security } },
    },
    async (request) => {
      const principal = sessionOf(request);
      return setSecurity(
        ctx,
        principal.organizationId,
        request.body,
        actorOf(request),
        principal.twoFactorEnabled,
      );
    },
  );

  app.post(
    '/auth/accept-invite/',
    { schema: { ...checksPasswords, body: AcceptInviteBody, response: { 200: LoginResult } } },
    async (request, reply) => {
      const result = await acceptInvitation(ctx, request.body, clientOf(request));
      setSessionCookie(ctx, reply, result.token);
      return result;
    },
  );
}
