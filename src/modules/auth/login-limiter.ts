// Failed logins are limited per account and address (decisions: 10 per 15 minutes). An attempt is counted
// before its password or code is checked, in the same synchronous step as the limit check, so parallel
// attempts cannot all pass the check before any is counted (300 at once used to get 137 evaluated). A
// success clears the count; an attempt the hash queue refused unchecked is given back. The password step,
// the two-factor step, identity confirmation and password change all count against the same limit.
import type { FastifyReply } from 'fastify';
import type { AppContext } from '../../context.ts';
import { applyRateLimit, FixedWindowLimiter } from '../../http/rate-limit.ts';
import { PasswordCheckBusyError } from './passwords.ts';
import { normalizeEmail } from './store.ts';

export class LoginLimiter {
  private readonly failures: FixedWindowLimiter;

  constructor(ctx: AppContext) {
    const limits = ctx.config.rateLimits;
    this.failures = new FixedWindowLimiter(limits.loginFailures, limits.loginWindowMs, ctx.clock);
  }

  /**
   * Counts an attempt for (email, address) or answers 429; then runs the check. A check that returns a
   * falsy value keeps the count; a truthy one clears it (unless `clearOnSuccess` is false: a right
   * password that still needs its second factor); a refusal of the hash queue gives it back.
   */
  async attempt<T>(
    reply: FastifyReply,
    email: string,
    address: string,
    check: () => Promise<T>,
    clearOnSuccess: (result: T) => boolean = Boolean,
  ): Promise<T> {
    const key = `${normalizeEmail(email)}|${address}`;
    applyRateLimit(reply, this.failures.hit(key), 'Too many failed login attempts. Try again later.');
    let result: T;
    try {
      result = await check();
    } catch (error) {
      if (error instanceof PasswordCheckBusyError) this.failures.release(key);
      throw error;
    }
    if (result && clearOnSuccess(result)) this.failures.reset(key);
    return result;
  }
}
