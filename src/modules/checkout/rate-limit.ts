// The per-IP limit of the public endpoints (the hosted step, sync-status by token, payment-link pages):
// one window per service instance. The hosted step counts per IP *and checkout token*: tokens are minted
// only by API keys (limited per key) or payment-link starts (limited per IP), so a shop, test suite or
// office behind one address can run many checkouts at once while each checkout stays limited.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { applyRateLimit, FixedWindowLimiter } from '../../http/rate-limit.ts';

const limiters = new WeakMap<AppContext, FixedWindowLimiter>();

export function limitPublicCaller(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  scope = '',
): void {
  let limiter = limiters.get(ctx);
  if (!limiter) {
    const { publicPerWindow, publicWindowMs } = ctx.config.rateLimits;
    limiter = new FixedWindowLimiter(publicPerWindow, publicWindowMs, ctx.clock);
    limiters.set(ctx, limiter);
  }
  applyRateLimit(
    reply,
    limiter.hit(scope ? `${request.ip}|${scope}` : request.ip),
    'Too many requests from this address. Try again later.',
  );
}
