// The per-IP limit of the public endpoints (the hosted step, sync-status by token, payment-link pages):
// one window per service instance. The hosted step counts per IP *and checkout token*: tokens are minted
// only by API keys (limited per key) or payment-link starts (limited per IP), so a shop, test suite or
// office behind one address can run many checkouts at once while each checkout stays limited.
// Unknown tokens (404s) count per IP alone: guessing tokens from one address is limited like any
// public caller, and cannot create a window per guess.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { clientNetwork } from '../../http/client-network.ts';
import { applyRateLimit, FixedWindowLimiter } from '../../http/rate-limit.ts';

interface PublicLimiters {
  calls: FixedWindowLimiter;
  unknownTokens: FixedWindowLimiter;
}

const limiters = new WeakMap<AppContext, PublicLimiters>();

function limitersOf(ctx: AppContext): PublicLimiters {
  let found = limiters.get(ctx);
  if (!found) {
    const { publicPerWindow, publicWindowMs } = ctx.config.rateLimits;
    found = {
      calls: new FixedWindowLimiter(publicPerWindow, publicWindowMs, ctx.clock),
      unknownTokens: new FixedWindowLimiter(publicPerWindow, publicWindowMs, ctx.clock),
    };
    limiters.set(ctx, found);
  }
  return found;
}

const DETAIL = 'Too many requests from this address. Try again later.';

export function limitPublicCaller(
  ctx: AppContext,
  request: FastifyRequest,
  reply: FastifyReply,
  scope = '',
): void {
  const { calls, unknownTokens } = limitersOf(ctx);
  const network = clientNetwork(request.ip);
  if (scope) applyRateLimit(reply, unknownTokens.peek(network), DETAIL);
  applyRateLimit(reply, calls.hit(scope ? `${network}|${scope}` : network), DETAIL);
}

/** Counts a request that named no checkout (answered 404) against its address. */
export function countUnknownToken(ctx: AppContext, request: FastifyRequest): void {
  limitersOf(ctx).unknownTokens.hit(clientNetwork(request.ip));
}
