// One HTTP attempt: POST the exact body over a keep-alive agent, no redirects followed, a hard
// timeout, and only to public addresses unless the guard is off (KASSA_WEBHOOK_ALLOW_PRIVATE) or the URL is exempt.
// A URL with credentials in it is not sent at all. Never throws: the outcome is data.
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { CREDENTIALS_REFUSED } from './endpoint-url.ts';
import { assertPublicAddress, BlockedAddressError, guardedLookup } from './ssrf.ts';

export interface AttemptOutcome {
  /** The response status, or null when no response arrived. */
  status: number | null;
  error: string | null;
  durationMs: number;
  retryAfter: string | null;
  /** The first kilobyte of a non-2xx response body. */
  responseBody: string | null;
}

const KEEP_BODY = 1024;
const MAX_READ = 64 * 1024;

export function isSuccess(outcome: AttemptOutcome): boolean {
  return outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
}

/**
 * Text from the receiver, made storable: a NUL (which PostgreSQL's text cannot hold: the worker's
 * whole flush of outcomes failed on one, and its deliveries were sent again at every lease) and a lone
 * surrogate become U+FFFD, as the UTF-8 decoder already makes every invalid byte.
 */
export function storable(text: string): string {
  return text.toWellFormed().replaceAll('\u0000', '\ufffd');
}

function describe(error: unknown, timeoutMs: number, timedOut: boolean): string {
  return storable(describeError(error, timeoutMs, timedOut));
}

function describeError(error: unknown, timeoutMs: number, timedOut: boolean): string {
  if (timedOut) return `Timed out after ${timeoutMs} ms.`;
  if (error instanceof BlockedAddressError) return `Refused: ${error.message}`;
  if (error instanceof Error) {
    const code = 'code' in error && typeof error.code === 'string' ? error.code : null;
    return code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

interface Target {
  secure: boolean;
  hostname: string;
  options: http.RequestOptions;
}

/** Parses an endpoint URL once into request options (endpoints are few; deliveries are many). */
const targets = new Map<string, Target>();
function targetOf(url: string): Target {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    // An endpoint stored before credentials were refused at configuration: never sent (endpoint-url.ts).
    if (parsed.username || parsed.password) throw new Error(CREDENTIALS_REFUSED);
    const hostname = parsed.hostname.replace(/^\[|\]$/g, '');
    target = {
      secure: parsed.protocol === 'https:',
      hostname,
      options: {
        protocol: parsed.protocol,
        hostname,
        port: parsed.port || undefined,
        path: parsed.pathname + parsed.search,
      },
    };
    if (targets.size >= 1000) targets.clear();
    targets.set(url, target);
  }
  return target;
}

type Agents = { http: http.Agent; https: https.Agent };

export interface SenderOptions {
  /** Refuse non-public addresses (the SSRF guard). */
  guarded: boolean;
  /** URLs the guard lets through all the same (the service's own test receiver). */
  exempt?: (url: string) => boolean;
  timeoutMs: number;
  maxSocketsPerHost?: number;
}

export class WebhookSender {
  private readonly guardedAgents: Agents | null;
  private readonly openAgents: Agents;
  private readonly exempt: (url: string) => boolean;
  private readonly timeoutMs: number;

  constructor(options: SenderOptions) {
    this.timeoutMs = options.timeoutMs;
    this.exempt = options.exempt ?? (() => false);
    const agentOptions = {
      keepAlive: true,
      maxSockets: options.maxSocketsPerHost ?? 64,
      maxFreeSockets: options.maxSocketsPerHost ?? 64,
      scheduling: 'lifo' as const,
    };
    const agents = (extra: http.AgentOptions): Agents => ({
      http: new http.Agent({ ...agentOptions, ...extra }),
      https: new https.Agent({ ...agentOptions, ...extra }),
    });
    this.openAgents = agents({});
    this.guardedAgents = options.guarded ? agents({ lookup: guardedLookup }) : null;
  }

  send(url: string, body: string, headers: Record<string, string>): Promise<AttemptOutcome> {
    const started = performance.now();
    const timeoutMs = this.timeoutMs;
    let target: Target;
    let agents = this.openAgents;
    try {
      target = targetOf(url);
      const guarded = this.guardedAgents !== null && !this.exempt(url);
      if (guarded && this.guardedAgents) agents = this.guardedAgents;
      // An IP literal is connected to without a lookup, so the guarded lookup never sees it.
      if (guarded && isIP(target.hostname)) assertPublicAddress(target.hostname);
    } catch (error) {
      const message = describe(error, timeoutMs, false);
      return Promise.resolve({
        status: null,
        error: message,
        durationMs: 0,
        retryAfter: null,
        responseBody: null,
      });
    }
    return new Promise((resolve) => {
      let status: number | null = null;
      let retryAfter: string | null = null;
      let responseBody: string | null = null;
      let timedOut = false;
      let settled = false;
      const finish = (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        const ok = status !== null && status >= 200 && status < 300;
        resolve({
          status,
          // A 2xx counts even if the rest of its body never arrived.
          error: error === null || ok ? null : describe(error, timeoutMs, timedOut),
          durationMs: Math.round(performance.now() - started),
          retryAfter,
          responseBody,
        });
      };
      const secure = target.secure;
      const request = (secure ? https : http).request(
        {
          ...target.options,
          method: 'POST',
          agent: secure ? agents.https : agents.http,
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        },
        (response) => {
          status = response.statusCode ?? null;
          const header = response.headers['retry-after'];
          retryAfter = typeof header === 'string' ? header : null;
          const keep = !(status !== null && status >= 200 && status < 300);
          let read = 0;
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            read += chunk.length;
            if (keep && text.length < KEEP_BODY) text += chunk.slice(0, KEEP_BODY - text.length);
            if (read > MAX_READ) response.destroy();
          });
          const done = (error: unknown) => {
            responseBody = keep ? storable(text) : null;
            finish(error);
          };
          response.on('end', () => done(null));
          response.on('close', () => done(null));
          response.on('error', done);
        },
      );
      const timer = setTimeout(() => {
        timedOut = true;
        request.destroy(new Error('timeout'));
        finish(new Error('timeout'));
      }, timeoutMs);
      request.on('error', finish);
      request.end(body);
    });
  }

  close(): void {
    for (const agents of [this.openAgents, this.guardedAgents]) {
      agents?.http.destroy();
      agents?.https.destroy();
    }
  }
}
