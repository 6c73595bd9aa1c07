// What stands in front of POST /api/provider/webhooks/{provider}/ (public, and each id it names costs a
// provider read): a per-address rate limit, a small body, and for the simulator a Kassa-Signature keyed
// from KASSA_SECRET_KEY. The id cap (MAX_WEBHOOK_IDS) is applied once the body is parsed (sync.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { clientNetwork } from '../../http/client-network.ts';
import { ValidationError } from '../../http/errors.ts';
import { applyRateLimit, FixedWindowLimiter } from '../../http/rate-limit.ts';
import { SIGNATURE_HEADER, simulatorSignatureProblem } from '../../provider/simulator/webhook-signature.ts';

/** Ids (payments and refunds together) one call may name. */
export const MAX_WEBHOOK_IDS = 100;

const limiters = new WeakMap<AppContext, FixedWindowLimiter>();

/** onRequest: counts the call against the caller's address (the public limit), before any body is read. */
export function limitProviderWebhook(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): void {
  let limiter = limiters.get(ctx);
  if (!limiter) {
    const { publicPerWindow, publicWindowMs } = ctx.config.rateLimits;
    limiter = new FixedWindowLimiter(publicPerWindow, publicWindowMs, ctx.clock);
    limiters.set(ctx, limiter);
  }
  applyRateLimit(
    reply,
    limiter.hit(clientNetwork(request.ip)),
    'Too many requests from this address. Try again later.',
  );
}

/** preHandler: the simulator's calls must carry a valid Kassa-Signature over the raw body. */
export function verifyProviderWebhook(ctx: AppContext, provider: string, request: FastifyRequest): void {
  if (provider !== 'simulator') return;
  const problem = simulatorSignatureProblem(
    ctx.config.secretKey,
    request.headers[SIGNATURE_HEADER],
    request.rawBody ?? '',
    Math.floor(ctx.clock().getTime() / 1000),
  );
  if (problem !== null) throw new ValidationError(`Kassa-Signature: the signature ${problem}.`);
}
