// Defences against card testing (someone running stolen card numbers through a merchant's checkout to
// learn which work). Three rules, from decisions.md "Payments, checkout and the hosted step":
// - a checkout takes at most MAX_DECLINES declined attempts, then its payment fails (one event) and
//   further attempts are a 410;
// - declined attempts are limited per client address across checkouts
//   (KASSA_RATE_LIMIT_DECLINES_PER_ADDRESS an hour); over it every attempt is a 429;
// - the customer sees one generic decline message, so the answer says nothing about why a card failed
//   (expired, no funds, wrong CVC); the precise reason stays in the payment's depositAttempts.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { clientNetwork } from '../../http/client-network.ts';
import { applyRateLimit, FixedWindowLimiter } from '../../http/rate-limit.ts';
import type { DepositAttemptRow, PaymentRow } from '../payments/table.ts';
import { movePayment } from '../payments/transitions.ts';

export const MAX_DECLINES = 5;
export const DECLINE_WINDOW_MS = 3_600_000;
export const GENERIC_DECLINE = 'Your card was declined.';

/** Attempt statuses that are a refusal of the card (a customer may retry with another). */
const DECLINED = new Set(['requires_payment_method', 'failed']);

export function isDecline(status: string): boolean {
  return DECLINED.has(status);
}

/** What the customer is told of an attempt's error: nothing precise. */
export function customerErrorMessage(errorMessage: string | null): string | null {
  return errorMessage === null ? null : GENERIC_DECLINE;
}

/**
 * Inside the transaction that records an attempt, with the payment's attempts as it left them: once the
 * payment has MAX_DECLINES declined attempts, it fails (movePayment emits its one
 * transaction.status_changed).
 */
export async function failAfterDeclineLimit<
  T extends { payment: PaymentRow; changed: boolean; attempts: Pick<DepositAttemptRow, 'status'>[] },
>(trx: Executor, recorded: T, now: string): Promise<T> {
  if (recorded.payment.status !== 'processing') return recorded;
  if (recorded.attempts.filter((attempt) => isDecline(attempt.status)).length < MAX_DECLINES) return recorded;
  const failed = await movePayment(trx, recorded.payment.id, 'processing', 'failed', now);
  return failed ? { ...recorded, payment: failed, changed: true } : recorded;
}

const limiters = new WeakMap<AppContext, FixedWindowLimiter>();

function declineLimiter(ctx: AppContext): FixedWindowLimiter {
  let limiter = limiters.get(ctx);
  if (!limiter) {
    limiter = new FixedWindowLimiter(ctx.config.rateLimits.declinesPerAddress, DECLINE_WINDOW_MS, ctx.clock);
    limiters.set(ctx, limiter);
  }
  return limiter;
}

/** Before an attempt: an address that has used up its declines gets a 429 (with Retry-After). */
export function assertAddressMayPay(ctx: AppContext, request: FastifyRequest, reply: FastifyReply): void {
  applyRateLimit(
    reply,
    declineLimiter(ctx).peek(clientNetwork(request.ip)),
    'Too many declined card attempts from this address. Try again later.',
  );
}

/** After an attempt: a decline counts against the address. */
export function countDecline(ctx: AppContext, request: FastifyRequest, status: string | undefined): void {
  if (status !== undefined && isDecline(status)) declineLimiter(ctx).hit(clientNetwork(request.ip));
}
