// A typed client for Kassa's API-key API. The key decides the base path (sandbox keys → /sandbox/api).
// POSTs carry an automatic Idempotency-Key, so retries after timeouts or 5xx never charge twice.
import { randomUUID } from 'node:crypto';
import { errorFor, KassaConnectionError } from './errors.ts';
import type {
  CheckoutCreateParams,
  CheckoutSession,
  Page,
  Payment,
  Refund,
  RefundCreated,
  RefundCreateParams,
  RefundListParams,
} from './types.ts';

export interface KassaOptions {
  /** Origin of the Kassa server, e.g. https://pay.example.com (default http://localhost:3000). */
  host?: string;
  /** Retries after connection errors, 409 in-flight, 429 and 5xx (default 2). */
  maxRetries?: number;
  timeoutMs?: number;
  fetch?: typeof fetch;
}

export interface RequestOptions {
  idempotencyKey?: string;
}

const RETRYABLE = new Set([409, 429, 500, 502, 503, 504]);

export class Kassa {
  readonly basePath: string;
  private readonly apiKey: string;
  private readonly host: string;
  private readonly maxRetries: number;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;

  constructor(apiKey: string, options: KassaOptions = {}) {
    if (!/^kassa_(live|test)_/.test(apiKey))
      throw new TypeError('Kassa API keys start with kassa_live_ or kassa_test_.');
    this.apiKey = apiKey;
    this.basePath = apiKey.startsWith('kassa_test_') ? '/sandbox/api' : '/api';
    this.host = (options.host ?? 'http://localhost:3000').replace(/\/+$/, '');
    this.maxRetries = options.maxRetries ?? 2;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    // Called as a plain function: a fetch invoked as a method of this client may refuse its `this`.
    const fetchImpl = options.fetch ?? fetch;
    this.fetchImpl = (input, init) => fetchImpl(input, init);
  }

  readonly checkout = {
    create: (params: CheckoutCreateParams, options?: RequestOptions) =>
      this.request<CheckoutSession>('POST', '/checkout/create/', params, options),
  };

  readonly payments = {
    retrieve: (id: string | number) =>
      this.request<Payment>('GET', `/transactions/${encodeURIComponent(String(id))}/`),
  };

  readonly refunds = {
    create: (paymentId: string | number, params: RefundCreateParams, options?: RequestOptions) =>
      this.request<RefundCreated>(
        'POST',
        `/transactions/${encodeURIComponent(String(paymentId))}/refund/`,
        params,
        options,
      ),
    list: (params: RefundListParams = {}) => {
      const query = new URLSearchParams();
      for (const [name, value] of Object.entries(params))
        if (value !== undefined) query.set(name, String(value));
      const suffix = query.size ? `?${query}` : '';
      return this.request<Page<Refund>>('GET', `/refunds/${suffix}`);
    },
    retrieve: (id: string | number) =>
      this.request<Refund>('GET', `/refunds/${encodeURIComponent(String(id))}/`),
  };

  private async request<T>(
    method: string,
    path: string,
    body?: unknown,
    options: RequestOptions = {},
  ): Promise<T> {
    const headers: Record<string, string> = {
      authorization: `Api-Key ${this.apiKey}`,
      accept: 'application/json',
    };
    let payload: string | undefined;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      headers['content-type'] = 'application/json';
    }
    if (method === 'POST') headers['idempotency-key'] = options.idempotencyKey ?? randomUUID();
    for (let attempt = 0; ; attempt += 1) {
      let response: Response;
      try {
        response = await this.fetchImpl(this.host + this.basePath + path, {
          method,
          headers,
          body: payload,
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (error) {
        if (attempt < this.maxRetries) {
          await this.backoff(attempt, null);
          continue;
        }
        throw new KassaConnectionError(`Could not reach Kassa: ${(error as Error).message}`);
      }
      const text = await response.text();
      if (response.ok) return (text ? JSON.parse(text) : null) as T;
      if (RETRYABLE.has(response.status) && attempt < this.maxRetries) {
        await this.backoff(attempt, response.headers.get('retry-after'));
        continue;
      }
      let detail = text;
      try {
        detail = (JSON.parse(text) as { detail?: string }).detail ?? text;
      } catch {}
      throw errorFor(response.status, detail, response.headers.get('x-request-id'));
    }
  }

  /** Exponential backoff with full jitter; a server's Retry-After wins, capped at 10 s. */
  private backoff(attempt: number, retryAfter: string | null): Promise<void> {
    const hinted = retryAfter !== null ? Number(retryAfter) * 1000 : Number.NaN;
    const ms = Number.isFinite(hinted)
      ? Math.min(hinted, 10_000)
      : Math.random() * Math.min(8000, 300 * 2 ** attempt);
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}
