// The one way the dashboard talks to the API: same-origin fetch with the session cookie, the CSRF
// header on every request, JSON in and out, and errors as ApiError carrying the server's `detail`.

export class ApiError extends Error {
  readonly status: number;
  readonly detail: string;
  constructor(status: number, detail: string) {
    super(detail);
    this.status = status;
    this.detail = detail;
  }
}

type SessionEndedListener = () => void;
const sessionEndedListeners = new Set<SessionEndedListener>();

/** Called when any request answers 401: the session expired or was logged out elsewhere. */
export function onSessionEnded(listener: SessionEndedListener): () => void {
  sessionEndedListeners.add(listener);
  return () => sessionEndedListeners.delete(listener);
}

let checking = false;

/**
 * A 401 usually means the session ended, but an endpoint that takes only API keys answers 401 to a
 * session too; so ask /auth/me/ before sending the user to the login page.
 */
function checkSessionAfter401(): void {
  if (checking) return;
  checking = true;
  fetch('/api/auth/me/', { credentials: 'same-origin', headers: { accept: 'application/json' } })
    .then((response) => {
      if (response.status === 401) for (const listener of sessionEndedListeners) listener();
    })
    .catch(() => undefined)
    .finally(() => {
      checking = false;
    });
}

type ReauthHandler = () => Promise<boolean>;
let reauthHandler: ReauthHandler | null = null;

/**
 * Who asks the user to confirm their identity when a sensitive action answers 403 with reauth_required
 * (the confirm-identity dialog); request() retries the action once it resolves true.
 */
export function onReauthRequired(handler: ReauthHandler): () => void {
  reauthHandler = handler;
  return () => {
    if (reauthHandler === handler) reauthHandler = null;
  };
}

export type Query = Record<string, string | number | boolean | null | undefined>;

export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

export interface RequestOptions {
  body?: unknown;
  signal?: AbortSignal;
  /** Do not treat a 401 as the end of the session (the login form itself). */
  expectUnauthorized?: boolean;
  /** Set on the retry after an identity confirmation, so it is asked once. */
  confirmed?: boolean;
}

export async function request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', 'x-requested-with': 'fetch' };
  let body: string | undefined;
  if (options.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.body);
  }
  let response: Response;
  try {
    response = await fetch(`/api${path}`, {
      method,
      headers,
      body,
      credentials: 'same-origin',
      signal: options.signal,
    });
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ApiError(0, 'The server could not be reached. Check your connection and try again.');
  }
  const text = await response.text();
  let parsed: unknown;
  if (text) {
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
  }
  if (!response.ok) {
    const detail =
      parsed && typeof parsed === 'object' && 'detail' in parsed && typeof parsed.detail === 'string'
        ? parsed.detail
        : `The server answered ${response.status} ${response.statusText}.`;
    if (response.status === 401 && !options.expectUnauthorized) checkSessionAfter401();
    const reauth = parsed && typeof parsed === 'object' && 'reauth_required' in parsed;
    if (response.status === 403 && reauth && reauthHandler && !options.confirmed && (await reauthHandler())) {
      return request<T>(method, path, { ...options, confirmed: true });
    }
    throw new ApiError(response.status, detail);
  }
  return parsed as T;
}

export const api = {
  get: <T>(path: string, query?: Query, signal?: AbortSignal) =>
    request<T>('GET', withQuery(path, query), { signal }),
  post: <T>(path: string, body?: unknown) => request<T>('POST', path, { body: body ?? {} }),
  put: <T>(path: string, body: unknown) => request<T>('PUT', path, { body }),
  patch: <T>(path: string, body: unknown) => request<T>('PATCH', path, { body }),
  delete: <T>(path: string) => request<T>('DELETE', path),
};

/** Lists come as an array or as a page {count, next, previous, results}; this gives a page either way. */
export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

export function asPage<T>(data: Page<T> | T[] | undefined): Page<T> | undefined {
  if (data === undefined) return undefined;
  if (Array.isArray(data)) return { count: data.length, next: null, previous: null, results: data };
  return data;
}

/** Field names whose words are not simply the name with spaces. */
const FIELD_LABELS: Record<string, string> = {
  iban: 'IBAN',
  bic: 'BIC',
  url: 'URL',
  endpoint_url: 'Endpoint URL',
  allowed_scopes: 'Scopes',
  product_id: 'Product',
  max_uses: 'Maximum uses',
  expires_at: 'Expiry',
  transaction_id: 'Payment ID',
};

function fieldLabel(path: string): string {
  return path
    .split('.')
    .map((part) => {
      const [, name, index] = /^([^[]+)(?:\[(\d+)\])?$/.exec(part) ?? [part, part];
      const words = FIELD_LABELS[name] ?? name.replace(/_/g, ' ');
      return index === undefined ? words : `${words} ${Number(index) + 1}`;
    })
    .join(', ')
    .replace(/^./, (first) => first.toUpperCase());
}

/**
 * The API names the field a 400 is about ("verification_code: the code is incorrect."); people read
 * its label instead ("Verification code: the code is incorrect.").
 */
export function readableDetail(detail: string): string {
  const match = /^([a-z][a-z0-9_]*(?:\[\d+\])?(?:\.[a-z][a-z0-9_]*(?:\[\d+\])?)*): (.+)$/s.exec(detail);
  return match ? `${fieldLabel(match[1])}: ${match[2]}` : detail;
}

export function errorText(error: unknown): string {
  if (error instanceof ApiError) return readableDetail(error.detail);
  if (error instanceof Error) return error.message;
  return 'Something went wrong.';
}
