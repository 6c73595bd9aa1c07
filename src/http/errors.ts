// Domain errors and their one mapping to HTTP. Every error leaves as {"detail": "..."}.
import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ProviderUnavailableError } from '../provider/types.ts';

export class DomainError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** Fields sent beside `detail` (e.g. `reauth_required`), for clients that act on the error. */
  readonly extra: Record<string, unknown>;
  constructor(
    status: number,
    detail: string,
    headers: Record<string, string> = {},
    extra: Record<string, unknown> = {},
  ) {
    super(detail);
    this.status = status;
    this.headers = headers;
    this.extra = extra;
  }
}

export class ValidationError extends DomainError {
  constructor(detail: string) {
    super(400, detail);
  }
}
export class UnauthorizedError extends DomainError {
  constructor(detail = 'Authentication credentials were not provided or are invalid.') {
    super(401, detail);
  }
}
export class ForbiddenError extends DomainError {
  constructor(detail = 'You do not have permission to perform this action.') {
    super(403, detail);
  }
}
export class NotFoundError extends DomainError {
  constructor(detail = 'Not found.') {
    super(404, detail);
  }
}
export class MethodNotAllowedError extends DomainError {
  constructor(method: string, allow: string[] = []) {
    super(405, `Method "${method}" not allowed.`, allow.length ? { allow: allow.join(', ') } : {});
  }
}
export class ConflictError extends DomainError {
  constructor(detail: string) {
    super(409, detail);
  }
}
export class GoneError extends DomainError {
  constructor(detail: string) {
    super(410, detail);
  }
}
export class UnprocessableError extends DomainError {
  constructor(detail: string) {
    super(422, detail);
  }
}
export class RateLimitedError extends DomainError {
  constructor(detail: string, retryAfterS: number, headers: Record<string, string> = {}) {
    super(429, detail, { 'retry-after': String(retryAfterS), ...headers });
  }
}

/**
 * A request that needed the payment provider's answer and got none (provider/index.ts, guardProvider):
 * 503, what to do, and when to ask again; never the provider's own words, never a 500.
 */
export const PROVIDER_UNAVAILABLE_DETAIL =
  'The payment provider did not answer. Nothing was changed; try again in a moment.';
export const PROVIDER_RETRY_AFTER_S = 5;

interface AjvIssue {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
  propertyName?: string;
}

function fieldName(issue: AjvIssue, context: string | undefined): string {
  const path = (issue.instancePath ?? '')
    .split('/')
    .filter(Boolean)
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('')
    .replace(/^\./, '');
  if (issue.keyword === 'required' && typeof issue.params?.missingProperty === 'string') {
    return path ? `${path}.${issue.params.missingProperty}` : issue.params.missingProperty;
  }
  if (issue.keyword === 'additionalProperties' && typeof issue.params?.additionalProperty === 'string') {
    return path ? `${path}.${issue.params.additionalProperty}` : issue.params.additionalProperty;
  }
  const name = path || (context === 'body' ? 'body' : (context ?? 'request'));
  // A key that breaks an object's propertyNames rule (checkout metadata): name the key itself.
  return typeof issue.propertyName === 'string' ? `${name} key "${issue.propertyName}"` : name;
}

/** Turns the validator's first complaint into a sentence that names the field. */
export function describeValidation(issues: AjvIssue[], context: string | undefined): string {
  const issue = issues[0] ?? {};
  const field = fieldName(issue, context);
  const p = issue.params ?? {};
  switch (issue.keyword) {
    case 'required':
      return `${field}: this field is required.`;
    case 'additionalProperties':
      return `${field}: unknown field.`;
    case 'type':
      return `${field}: must be of type ${String(p.type).replace(/,/g, ' or ')}.`;
    case 'maxLength':
      return `${field}: must be at most ${p.limit} characters.`;
    case 'minLength':
      return Number(p.limit) === 1
        ? `${field}: may not be blank.`
        : `${field}: must be at least ${p.limit} characters.`;
    case 'minimum':
    case 'exclusiveMinimum':
    case 'maximum':
    case 'exclusiveMaximum':
      return `${field}: must be ${p.comparison} ${p.limit}.`;
    case 'enum':
      return `${field}: must be one of ${(p.allowedValues as unknown[]).map(String).join(', ')}.`;
    case 'format':
      return `${field}: must be a valid ${p.format === 'uri' ? 'URL' : p.format === 'date-time' ? 'ISO 8601 date-time' : p.format}.`;
    case 'minItems':
      return `${field}: must contain at least ${p.limit} item${Number(p.limit) === 1 ? '' : 's'}.`;
    case 'maxItems':
      return `${field}: must contain at most ${p.limit} items.`;
    case 'maxProperties':
      return `${field}: must have at most ${p.limit} keys.`;
    case 'pattern':
      return `${field}: has an invalid format.`;
    default:
      return `${field}: ${issue.message ?? 'is invalid'}.`;
  }
}

function send(
  reply: FastifyReply,
  status: number,
  detail: string,
  headers: Record<string, string> = {},
  extra: Record<string, unknown> = {},
) {
  for (const [name, value] of Object.entries(headers)) reply.header(name, value);
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ detail, ...extra });
}

/**
 * The answer to a body that is not JSON: a 400 naming the header, as the decisions want a wrong content
 * type answered (a 400 whose detail names the field).
 */
export function wrongContentType(contentType: string | undefined): string {
  const given = contentType ? `"${contentType.slice(0, 100)}"` : 'none';
  return `Content-Type: must be application/json, got ${given}.`;
}

/** Route patterns by method, so an unknown method on a known path answers 405 rather than 404. */
function routeMatcher(app: FastifyInstance) {
  const patterns: { method: string; regex: RegExp }[] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const source = route.url
      .replace(/\/+$/, '')
      .replace(/[.+?^${}()|[\]\\]/g, '\\$&')
      .replace(/:[A-Za-z_]+/g, '[^/]+')
      .replace(/\*/g, '.*');
    for (const method of methods) patterns.push({ method, regex: new RegExp(`^${source}/?$`) });
  });
  return (path: string) =>
    [...new Set(patterns.filter((p) => p.regex.test(path)).map((p) => p.method))].filter((m) => m !== 'HEAD');
}

export function registerErrorHandling(app: FastifyInstance): void {
  const allowedMethods = routeMatcher(app);

  app.setNotFoundHandler((request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0];
    const allow = allowedMethods(path);
    // A route of this method that found nothing (a static file that is not there) is a 404, not a 405.
    const routed = allow.includes(request.method) || (request.method === 'HEAD' && allow.includes('GET'));
    if (allow.length > 0 && !routed && request.method !== 'OPTIONS') {
      return send(reply, 405, `Method "${request.method}" not allowed.`, { allow: allow.join(', ') });
    }
    return send(reply, 404, 'Not found.');
  });

  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    if (error instanceof DomainError)
      return send(reply, error.status, error.message, error.headers, error.extra);
    if (error.validation)
      return send(reply, 400, describeValidation(error.validation, error.validationContext));
    if ((error as unknown) instanceof ProviderUnavailableError) {
      request.log.warn({ err: error }, 'payment provider did not answer');
      return send(reply, 503, PROVIDER_UNAVAILABLE_DETAIL, { 'retry-after': String(PROVIDER_RETRY_AFTER_S) });
    }
    switch (error.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return send(reply, 400, 'body: malformed JSON.');
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return send(reply, 400, wrongContentType(request.headers['content-type']));
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return send(reply, 413, 'Request body is too large.');
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return send(reply, 400, 'Content-Length does not match the body.');
      case 'FST_ERR_BAD_URL':
      case 'FST_ERR_ASYNC_CONSTRAINT':
        return send(reply, 400, 'Malformed request URL.');
    }
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      // A plugin's own message is kept when it is a sentence; otherwise the status says it ("Forbidden.").
      const detail = /^[^\n]{1,300}[.!?]$/.test(error.message ?? '')
        ? error.message
        : `${STATUS_CODES[error.statusCode] ?? 'Bad Request'}.`;
      return send(reply, error.statusCode, detail);
    }
    request.log.error({ err: error }, 'unhandled error');
    return send(reply, 500, 'Internal server error.');
  });
}

/**
 * Errors the router raises before any route runs: a malformed percent-encoding is a 400, and a path
 * segment longer than the longest id we issue (maxParamLength) names nothing, so it is a 404.
 */
export function frameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  // These answers skip the onSend hooks that stamp every other response, so the request id goes on here.
  reply.header('x-request-id', request.id);
  if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') send(reply, 404, 'Not found.');
  else send(reply, 400, 'Malformed request URL.');
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (headers or URL over the size limit,
 * broken framing, a client too slow to send them): answered in the same {detail} shape, with a request
 * id, instead of Fastify's own {"error", "message", "statusCode"}; then the connection is closed.
 */
export function clientError(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, detail] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'The request was not received in time.']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'The request line and headers are too large.']
        : [400, 'Malformed HTTP request.'];
  const body = JSON.stringify({ detail });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}
