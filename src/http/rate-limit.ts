// Fixed-window rate limits kept in memory, per process (documented in docs/operations.md):
// checking them costs no database round trip on the hot path. Failed passwords and second-factor codes
// are counted in the database instead (modules/auth/password-tries.ts, second-factor-tries.ts).
import type { FastifyReply } from 'fastify';
import type { Clock } from '../context.ts';
import { RateLimitedError } from './errors.ts';

interface Window {
  start: number;
  count: number;
}

export interface LimitState {
  allowed: boolean;
  limit: number;
  remaining: number;
  resetMs: number;
}

export class FixedWindowLimiter {
  private readonly windows = new Map<string, Window>();
  private lastSweep = 0;

  readonly limit: number;
  readonly windowMs: number;
  private readonly clock: Clock;

  constructor(limit: number, windowMs: number, clock: Clock) {
    this.limit = limit;
    this.windowMs = windowMs;
    this.clock = clock;
  }

  private current(key: string, now: number): Window {
    if (now - this.lastSweep > this.windowMs) {
      for (const [k, w] of this.windows) if (now - w.start >= this.windowMs) this.windows.delete(k);
      this.lastSweep = now;
    }
    let window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) {
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    return window;
  }

  private state(window: Window, now: number, allowed: boolean): LimitState {
    return {
      allowed,
      limit: this.limit,
      remaining: Math.max(0, this.limit - window.count),
      resetMs: window.start + this.windowMs - now,
    };
  }

  /** Counts one request and says whether it is within the limit. */
  hit(key: string): LimitState {
    const now = this.clock().getTime();
    const window = this.current(key, now);
    if (window.count >= this.limit) return this.state(window, now, false);
    window.count += 1;
    return this.state(window, now, true);
  }

  /** Whether the key is already over the limit, without counting. */
  peek(key: string): LimitState {
    const now = this.clock().getTime();
    const window = this.current(key, now);
    return this.state(window, now, window.count < this.limit);
  }
}

export function rateLimitHeaders(state: LimitState): Record<string, string> {
  return {
    'ratelimit-limit': String(state.limit),
    'ratelimit-remaining': String(state.remaining),
    'ratelimit-reset': String(Math.max(1, Math.ceil(state.resetMs / 1000))),
  };
}

export function applyRateLimit(reply: FastifyReply, state: LimitState, detail: string): void {
  const headers = rateLimitHeaders(state);
  if (!state.allowed)
    throw new RateLimitedError(detail, Math.max(1, Math.ceil(state.resetMs / 1000)), headers);
  for (const [name, value] of Object.entries(headers)) reply.header(name, value);
}
