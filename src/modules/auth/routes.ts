// POST /api/auth/login/ (and login/2fa/), logout/, GET me/, POST confirm/, the session list, passwords
// (change, reset by mail) and two-factor setup. Who may call what is in members/permissions.ts.
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { UnauthorizedError, ValidationError } from '../../http/errors.ts';
import { FixedWindowLimiter } from '../../http/rate-limit.ts';
import { checksPasswords, ErrorResponse, IdParam, NoContent } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { parseNumericId } from '../../lib/ids.ts';
import { clientOf } from '../audit/record.ts';
import { clearSessionCookie, setSessionCookie } from './cookie.ts';
import { changePassword, confirmPasswordReset, requestPasswordReset } from './password-change.ts';
import { countedPasswordCheck } from './password-tries.ts';
import {
  Accepted,
  CodeBody,
  ConfirmBody,
  Confirmed,
  CurrentSession,
  LoginAnswer,
  LoginBody,
  LoginResult,
  PasswordChangeBody,
  PasswordResetBody,
  PasswordResetConfirmBody,
  RecoveryCodes,
  SecondStepBody,
  SessionList,
  TwoFactorSetup,
} from './schemas.ts';
import {
  challengedUser,
  confirmIdentity,
  listSessions,
  logout,
  passwordStep,
  revokeOwnSession,
  secondStep,
  sessionBody,
} from './service.ts';
import { disableTwoFactor, enableTwoFactor, regenerateRecoveryCodes, setupTwoFactor } from './two-factor.ts';

export async function authRoutes(app: App, { ctx }: RouteOptions) {
  const requireSession = sessionAuth(ctx);
  // Each reset link is a mail: one address cannot be flooded with them (the answer is 202 all the same).
  const resetMails = new FixedWindowLimiter(
    ctx.config.rateLimits.verificationCodes,
    ctx.config.rateLimits.verificationCodeWindowMs,
    ctx.clock,
  );

  app.post(
    '/auth/login/',
    {
      schema: {
        ...checksPasswords,
        body: LoginBody,
        response: { 200: LoginAnswer, 401: ErrorResponse('Invalid email or password.') },
      },
    },
    async (request, reply) => {
      const { email, password } = request.body;
      const outcome = await countedPasswordCheck(ctx, reply, email, request.ip, async () => {
        const result = await passwordStep(ctx, email, password, clientOf(request));
        return result.kind === 'failed' ? null : result;
      });
      if (!outcome) throw new UnauthorizedError('Invalid email or password.');
      if (outcome.kind === 'challenge') return outcome.body;
      setSessionCookie(ctx, reply, outcome.result.token);
      return outcome.result;
    },
  );

  app.post(
    '/auth/login/2fa/',
    {
      schema: {
        body: SecondStepBody,
        response: {
          200: LoginResult,
          401: ErrorResponse('The challenge is unknown, expired or used up, or the code is not valid.'),
          429: ErrorResponse(
            'Too many wrong two-factor codes for this account: retry after Retry-After seconds.',
          ),
        },
      },
    },
    async (request, reply) => {
      const { challenge, code } = request.body;
      const user = await challengedUser(ctx, challenge);
      // Codes are counted per challenge and per account in the database (second-factor-tries.ts).
      const result = await secondStep(ctx, user, challenge, code, clientOf(request));
      if (!result) throw new UnauthorizedError('Invalid two-factor code.');
      setSessionCookie(ctx, reply, result.token);
      return result;
    },
  );

  app.post(
    '/auth/logout/',
    { preHandler: requireSession, schema: { response: { 204: NoContent } } },
    async (request, reply) => {
      await logout(ctx, sessionOf(request), clientOf(request));
      clearSessionCookie(ctx, reply);
      return reply.code(204).send();
    },
  );

  app.get(
    '/auth/me/',
    { preHandler: requireSession, schema: { response: { 200: CurrentSession } } },
    async (request) => sessionBody(sessionOf(request)),
  );

  app.post(
    '/auth/confirm/',
    {
      preValidation: requireSession,
      schema: {
        ...checksPasswords,
        body: ConfirmBody,
        response: {
          200: Confirmed,
          403: ErrorResponse(
            'A code was sent while two-factor is off for the account (confirm with the password), or a cookie-authenticated request came without X-Requested-With.',
          ),
        },
      },
    },
    async (request, reply) => {
      const principal = sessionOf(request);
      const { password, code } = request.body;
      if ((password === undefined) === (code === undefined)) {
        throw new ValidationError('body: send either password or code.');
      }
      const confirm = () => confirmIdentity(ctx, principal, { password, code }, clientOf(request));
      const confirmed =
        password === undefined
          ? await confirm()
          : await countedPasswordCheck(ctx, reply, principal.user.email, request.ip, confirm);
      if (!confirmed) {
        throw new ValidationError(
          password !== undefined ? 'password: is not correct.' : 'code: is not valid.',
        );
      }
      return { authenticated_at: ctx.clock().toISOString() };
    },
  );

  app.get(
    '/auth/sessions/',
    { preValidation: requireSession, schema: { response: { 200: SessionList } } },
    async (request) => listSessions(ctx, sessionOf(request)),
  );

  app.delete(
    '/auth/sessions/:id/',
    { preValidation: requireSession, schema: { params: IdParam, response: { 204: NoContent } } },
    async (request, reply) => {
      const id = parseNumericId(request.params.id);
      if (id === null) throw new ValidationError('id: must be a session id.');
      await revokeOwnSession(ctx, sessionOf(request), id, clientOf(request));
      return reply.code(204).send();
    },
  );

  app.post(
    '/auth/password/',
    {
      preValidation: requireSession,
      schema: { ...checksPasswords, body: PasswordChangeBody, response: { 204: NoContent } },
    },
    async (request, reply) => {
      const principal = sessionOf(request);
      const changed = await countedPasswordCheck(ctx, reply, principal.user.email, request.ip, () =>
        changePassword(ctx, principal, request.body, clientOf(request)),
      );
      if (!changed) throw new ValidationError('current_password: is not correct.');
      return reply.code(204).send();
    },
  );

  app.post(
    '/auth/password-reset/',
    { schema: { body: PasswordResetBody, response: { 202: Accepted } } },
    async (request, reply) => {
      const email = request.body.email.trim().toLowerCase();
      if (resetMails.hit(email).allowed) {
        const send = await requestPasswordReset(ctx, email, clientOf(request));
        if (send)
          send().catch((error: Error) => request.log.error({ err: error }, 'password reset mail failed'));
      }
      return reply
        .code(202)
        .send({ message: 'If this email belongs to an account, a reset link is on its way.' });
    },
  );

  app.post(
    '/auth/password-reset/confirm/',
    { schema: { ...checksPasswords, body: PasswordResetConfirmBody, response: { 204: NoContent } } },
    async (request, reply) => {
      await confirmPasswordReset(ctx, request.body, clientOf(request));
      return reply.code(204).send();
    },
  );

  app.post(
    '/auth/2fa/setup/',
    { preValidation: requireSession, schema: { response: { 200: TwoFactorSetup } } },
    async (request) => {
      const principal = sessionOf(request);
      return setupTwoFactor(
        ctx,
        principal.userId,
        `Kassa (${principal.organization.name})`,
        clientOf(request),
      );
    },
  );

  app.post(
    '/auth/2fa/enable/',
    { preValidation: requireSession, schema: { body: CodeBody, response: { 200: RecoveryCodes } } },
    async (request) => enableTwoFactor(ctx, sessionOf(request).userId, request.body.code, clientOf(request)),
  );

  app.post(
    '/auth/2fa/disable/',
    {
      preValidation: requireSession,
      schema: {
        body: CodeBody,
        response: {
          204: NoContent,
          429: ErrorResponse(
            'Too many wrong two-factor codes for this account: retry after Retry-After seconds.',
          ),
        },
      },
    },
    async (request, reply) => {
      await disableTwoFactor(ctx, sessionOf(request).userId, request.body.code, clientOf(request));
      return reply.code(204).send();
    },
  );

  app.post(
    '/auth/2fa/recovery-codes/',
    { preValidation: requireSession, schema: { response: { 200: RecoveryCodes } } },
    async (request) => regenerateRecoveryCodes(ctx, sessionOf(request).userId, clientOf(request)),
  );
}
