// A typed client for Kassa's API-key API. The key decides the base path (sandbox keys → /sandbox/api).
// POSTs carry an automatic Idempotency-Key, so retries after timeouts or 5xx never charge twice.
import { randomUUID } from 'node:crypto';
import { errorFor, KassaConnectionError } from './errors.ts';
import type {
  CheckoutCreateParams,
  CheckoutSession,
  Page,
  Payment,
  PaymentListParams,
  Refund,
  RefundCreated,
  RefundCreateParams,
  RefundListParams,
  SyncStatus,
  SyncStatusParams,
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

type Query = { [name: string]: string | number | undefined };

/** `?a=1&b=2` from the defined parameters, or '' when there are none. */
function queryString(params: Query): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) if (value !== undefined) query.set(name, String(value));
  const text = query.toString();
  return text ? `?${text}` : '';
}

const segment = (id: string | number) => encodeURIComponent(String(id));

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
    /** POST /checkout/create/ (scope checkout:create): a hosted checkout session. */
    create: (params: CheckoutCreateParams, options?: RequestOptions) =>
      this.request<CheckoutSession>('POST', '/checkout/create/', params, options),
    /** POST /checkout/sync-status/: asks the provider where the checkout stands; safe to repeat. */
    syncStatus: (params: SyncStatusParams, options?: RequestOptions) =>
      this.request<SyncStatus>('POST', '/checkout/sync-status/', params, options),
  };

  readonly payments = {
    /** GET /transactions/{id}/ (scope payments:read): by public id (TX…) or numeric id. */
    retrieve: (id: string | number) => this.request<Payment>('GET', `/transactions/${segment(id)}/`),
    /** GET /transactions/ (scope payments:read): one page, newest first. */
    list: (params: PaymentListParams = {}) =>
      this.request<Page<Payment>>('GET', `/transactions/${queryString({ ...params })}`),
    /** Every payment matching the filters, newest first, page after page. */
    listAll: (params: Omit<PaymentListParams, 'page'> = {}) =>
      this.pages<Payment>(`/transactions/${queryString({ ...params })}`),
  };

  readonly refunds = {
    /** POST /transactions/{id}/refund/ (scope refunds:write or payments:write); omit amount for all that is left. */
    create: (paymentId: string | number, params: RefundCreateParams, options?: RequestOptions) =>
      this.request<RefundCreated>('POST', `/transactions/${segment(paymentId)}/refund/`, params, options),
    /** GET /refunds/ (scope refunds:read or payments:read): one page. */
    list: (params: RefundListParams = {}) =>
      this.request<Page<Refund>>('GET', `/refunds/${queryString({ ...params })}`),
    /** Every refund matching the filters, page after page. */
    listAll: (params: Omit<RefundListParams, 'page'> = {}) =>
      this.pages<Refund>(`/refunds/${queryString({ ...params })}`),
    /** GET /refunds/{id}/: by public id (RF…), the creation's refund_public_id, or numeric id. */
    retrieve: (id: string | number) => this.request<Refund>('GET', `/refunds/${segment(id)}/`),
  };

  /** Follows `next` links from the first page to the last. */
  private async *pages<T>(firstPath: string): AsyncGenerator<T, void, undefined> {
    let path: string | null = firstPath;
    while (path !== null) {
      const page: Page<T> = await this.request<Page<T>>('GET', path);
      yield* page.results;
      path = page.next === null ? null : this.relativePath(page.next);
    }
  }

  /** A `next` URL as a path under the base path (the server may sit behind a proxy with another host). */
  private relativePath(url: string): string {
    const { pathname, search } = new URL(url);
    const start = pathname.indexOf(`${this.basePath}/`);
    return (start === -1 ? pathname : pathname.slice(start + this.basePath.length)) + search;
  }

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
