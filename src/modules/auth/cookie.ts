// The kassa_session cookie: HttpOnly, SameSite=Lax, Secure when the public URL is https.
import type { FastifyReply } from 'fastify';
import type { AppContext } from '../../context.ts';
import { SESSION_COOKIE } from '../../http/auth.ts';
import { ABSOLUTE_TIMEOUT_MS } from './service.ts';

function secure(ctx: AppContext): string {
  return ctx.config.publicUrl.startsWith('https:') ? '; Secure' : '';
}

export function setSessionCookie(ctx: AppContext, reply: FastifyReply, token: string): void {
  reply.header(
    'set-cookie',
    `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Lax; Max-Age=${ABSOLUTE_TIMEOUT_MS / 1000}${secure(ctx)}`,
  );
}

export function clearSessionCookie(ctx: AppContext, reply: FastifyReply): void {
  reply.header('set-cookie', `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0${secure(ctx)}`);
}
