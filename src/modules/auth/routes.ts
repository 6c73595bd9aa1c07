// POST /api/auth/login/, logout/, GET me/.
import { Type } from 'typebox';
import { SESSION_COOKIE, sessionAuth, sessionOf } from '../../http/auth.ts';
import { UnauthorizedError } from '../../http/errors.ts';
import { applyRateLimit, FixedWindowLimiter } from '../../http/rate-limit.ts';
import { Email, NoContent } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { CurrentSession, LoginResult } from './schemas.ts';
import { ABSOLUTE_TIMEOUT_MS, login, logout } from './service.ts';

export async function authRoutes(app: App, { ctx }: RouteOptions) {
  const failures = new FixedWindowLimiter(
    ctx.config.rateLimits.loginFailures,
    ctx.config.rateLimits.loginWindowMs,
    ctx.clock,
  );
  const secure = ctx.config.publicUrl.startsWith('https:') ? '; Secure' : '';
  const requireSession = sessionAuth(ctx);

  app.post(
    '/auth/login/',
    {
      schema: {
        body: Type.Object({ email: Email, password: Type.String({ minLength: 1, maxLength: 1024 }) }),
        response: { 200: LoginResult },
      },
    },
    async (request, reply) => {
      const limitKey = `${request.body.email.trim().toLowerCase()}|${request.ip}`;
      applyRateLimit(reply, failures.peek(limitKey), 'Too many failed login attempts. Try again later.');
      const result = await login(ctx, request.body.email, request.body.password);
      if (!result) {
        failures.hit(limitKey);
        throw new UnauthorizedError('Invalid email or password.');
      }
      failures.reset(limitKey);
      reply.header(
        'set-cookie',
        `${SESSION_COOKIE}=${result.token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${ABSOLUTE_TIMEOUT_MS / 1000}${secure}`,
      );
      return result;
    },
  );

  app.post(
    '/auth/logout/',
    { preHandler: requireSession, schema: { response: { 204: NoContent } } },
    async (request, reply) => {
      await logout(ctx, sessionOf(request).sessionId);
      reply.header('set-cookie', `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure}`);
      return reply.code(204).send();
    },
  );

  app.get(
    '/auth/me/',
    { preHandler: requireSession, schema: { response: { 200: CurrentSession } } },
    async (request) => {
      const session = sessionOf(request);
      return { expires_at: session.expiresAt, user: session.user, organization: session.organization };
    },
  );
}
