// What the OpenAPI document gets after @fastify/swagger built it from the route schemas: named schemas
// moved to components.schemas and $ref'd, the error statuses each operation can answer (with the
// {detail} body and, for 429, the rate-limit headers; the 503s a route marks in its schema), the
// Idempotency-Key header, and the webhooks.
import { PERMISSIONS, ROLES } from '../modules/members/roles.ts';
import { WEBHOOK_EVENTS, WEBHOOK_HEADERS } from '../modules/webhooks/event-schemas.ts';
import {
  ASKS_PROVIDER,
  CHECKS_PASSWORDS,
  DOCUMENTED,
  type DocumentedFields,
  ErrorBody,
  LIMITED_PER_ADDRESS,
  SCHEMA_NAME,
} from './schemas.ts';

type Json = Record<string, unknown>;
interface Operation extends Json {
  security?: Record<string, string[]>[];
  parameters?: Json[];
  requestBody?: unknown;
  responses: Record<string, unknown>;
}
export interface OpenApiObject extends Json {
  paths: Record<string, Record<string, Operation>>;
  components: Json & { schemas?: Record<string, unknown> };
}

const ERROR_REF = { $ref: '#/components/schemas/Error' };
const { $id: _id, [SCHEMA_NAME]: _name, ...ERROR_SCHEMA } = JSON.parse(JSON.stringify(ErrorBody)) as Json;
const json = (description: string, headers?: Json) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema: ERROR_REF } },
});

const RATE_LIMIT_HEADERS = {
  'RateLimit-Limit': { description: 'Requests allowed in the window.', schema: { type: 'integer' } },
  'RateLimit-Remaining': { description: 'Requests left in the window.', schema: { type: 'integer' } },
  'RateLimit-Reset': { description: 'Seconds until the window resets.', schema: { type: 'integer' } },
};
const headerRefs = (names: string[]) =>
  Object.fromEntries(names.map((name) => [name, { $ref: `#/components/headers/${name}` }]));

const rateLimitedHeaders = {
  'Retry-After': { $ref: '#/components/headers/Retry-After' },
  ...headerRefs(Object.keys(RATE_LIMIT_HEADERS)),
};

/** Session routes with a limit of their own (refund verification codes, the events long-poll). */
const LIMITED_SESSION_PATHS = [/^\/api\/refunds\/verification-code\//, /^\/api\/organization\/events\//];

/** What a route declares in its own schema about the waits it can be refused in (see http/schemas.ts). */
interface RouteMarks {
  asksProvider: boolean;
  checksPasswords: boolean;
  limitedPerAddress: boolean;
}

/** Whether the operation answers a DRF page ({count, next, previous, results}): a page past the end is a 404. */
function answersPages(operation: Operation): boolean {
  const ok = Object.entries(operation.responses ?? {}).find(([status]) => status.startsWith('2'))?.[1] as
    | { content?: Record<string, { schema?: { properties?: Json } }> }
    | undefined;
  const properties = ok?.content?.['application/json']?.schema?.properties ?? {};
  return ['count', 'next', 'previous', 'results'].every((name) => name in properties);
}

/** Every role has it (members/roles.ts): a member is never refused it for their role. */
const EVERY_ROLE = new Set(
  Object.entries(PERMISSIONS)
    .filter(([, permission]) => permission.roles.length === ROLES.length)
    .map(([name]) => name),
);

/**
 * What a session route's 403 can mean: its permission (when some role lacks it), the CSRF header (on a
 * change), two-factor (but for the member's own account), recent authentication. Null when none can
 * happen: a read of one's own account (GET /api/auth/me/, the session list) is never a 403.
 */
function sessionForbidden(method: string, operation: Operation): string | null {
  const permission = String(operation['x-kassa-permission']);
  const reasons = [
    !EVERY_ROLE.has(permission) && 'The role lacks the permission.',
    method !== 'get' && 'A cookie-authenticated change came without X-Requested-With.',
    permission !== 'account' &&
      'The organization requires two-factor and the user has not set it up (`two_factor_setup_required`).',
    operation['x-kassa-recent-auth'] === true &&
      'The last login or confirmation is over 10 minutes old (`reauth_required`): POST /api/auth/confirm/, then retry.',
  ].filter((reason) => typeof reason === 'string');
  return reasons.length > 0 ? reasons.join(' Or: ') : null;
}

/** Methods whose body Fastify reads, so that one over the body limit is refused with 413 before the route. */
const BODY_METHODS = new Set(['post', 'put', 'patch', 'delete']);

/**
 * Which errors an operation can answer, from how it authenticates, what it takes and what it marks: each
 * by its exact status (no `4XX` catch-all, so client generators and linters see every one). The errors
 * particular to one route (a 409 on a conflict, a 410 on a finished checkout…) are in its own response
 * schema, written with ErrorResponse (http/schemas.ts); test/helpers/conformance.ts fails any e2e call
 * whose 4xx status its route does not document exactly.
 */
function errorResponses(
  path: string,
  method: string,
  operation: Operation,
  marks: RouteMarks,
): Record<string, unknown> {
  const security = operation.security ?? [];
  const apiKey = security.some((requirement) => 'ApiKey' in requirement);
  const isPublic = security.length === 0;
  const responses: Record<string, unknown> = {
    400: json('The request is invalid: the detail names the field.'),
  };
  if (!isPublic) {
    responses[401] = json('No credentials, or invalid ones.');
    const forbidden = apiKey ? 'The key lacks the scope.' : sessionForbidden(method, operation);
    if (forbidden !== null) responses[403] = json(forbidden);
  }
  const notFound = [
    path.includes('{') && (isPublic ? 'Not found.' : 'Not found in this organization.'),
    answersPages(operation) && 'The page is past the last one ("Invalid page.").',
  ].filter((reason) => typeof reason === 'string');
  if (notFound.length > 0) responses[404] = json(notFound.join(' Or: '));
  if (apiKey && method === 'post') {
    responses[409] = json('The Idempotency-Key is still in use.');
    responses[422] = json('The Idempotency-Key was already used with a different request.');
  }
  if (BODY_METHODS.has(method)) responses[413] = json('The request body is over the size limit.');
  // 429 where a limit can refuse: every API-key route (the key's limit), a public route behind the
  // per-address limit (marked LIMITED_PER_ADDRESS, not every public route: the password-reset request and
  // Stripe's webhook have none), a route that checks passwords (its address's share of the password line,
  // auth/passwords.ts, and the login limiter's counts), and the session routes with a limit of their own.
  if (
    apiKey ||
    marks.limitedPerAddress ||
    marks.checksPasswords ||
    LIMITED_SESSION_PATHS.some((pattern) => pattern.test(path))
  ) {
    const rateLimited = marks.checksPasswords
      ? 'Rate limited, or this address already has its share of password checks in line: retry after Retry-After seconds.'
      : 'Rate limited: retry after Retry-After seconds.';
    responses[429] = json(rateLimited, rateLimitedHeaders);
  }
  // A route that asks the payment provider while the caller waits, or that checks or hashes a password in
  // the bounded line, says so in its own schema (ASKS_PROVIDER, CHECKS_PASSWORDS in http/schemas.ts), so
  // each 503 is documented wherever the handler can meet it; a route marked both names both causes.
  const unavailable = [
    marks.asksProvider &&
      'The payment provider did not answer (a timeout, a 5xx, a rate limit): nothing was changed; retry after Retry-After seconds.',
    marks.checksPasswords &&
      'The service is busy checking passwords (the line of password checks is full): the password was neither checked nor set and nothing was changed; retry after Retry-After seconds.',
  ].filter((reason) => typeof reason === 'string');
  if (unavailable.length > 0) {
    responses[503] = json(unavailable.join(' '), {
      'Retry-After': { $ref: '#/components/headers/Retry-After' },
    });
  }
  return responses;
}

/**
 * The route's own responses with the errors its kind answers. A status the route declares itself (with
 * ErrorResponse) keeps its description, which says what the status means there, and takes the headers of
 * the generated one (a 429's Retry-After and RateLimit-*); a 429 only the route declares gets them too.
 */
function withErrors(declared: Record<string, unknown>, generated: Record<string, unknown>) {
  const responses: Record<string, unknown> = { ...generated, ...declared };
  for (const [status, response] of Object.entries(declared)) {
    const own = generated[status] as Json | undefined;
    const headers = own?.headers ?? (status === '429' ? rateLimitedHeaders : undefined);
    if (headers) responses[status] = { ...(response as Json), headers };
  }
  return responses;
}

/** Puts the precise types of `documented` fields (see DOCUMENTED) in place of the validation's. */
function applyDocumented(operation: Operation): void {
  const fields = operation[DOCUMENTED] as DocumentedFields | undefined;
  delete operation[DOCUMENTED];
  if (!fields) return;
  const precise = JSON.parse(JSON.stringify(fields)) as Record<'query' | 'body', Json | undefined>;
  for (const parameter of operation.parameters ?? []) {
    const schema = parameter.in === 'query' ? precise.query?.[String(parameter.name)] : undefined;
    if (schema) parameter.schema = schema;
  }
  const body = (operation.requestBody as { content?: Record<string, { schema?: Json }> } | undefined)
    ?.content?.['application/json']?.schema;
  const properties = body?.properties as Json | undefined;
  for (const [name, schema] of Object.entries(precise.body ?? {})) {
    if (!properties?.[name])
      throw new Error(`x-documented names a body field ${name} the route does not take`);
    properties[name] = schema;
  }
}

/** Replaces every schema that carries SCHEMA_NAME with a $ref to its single copy in `schemas`. */
function hoist(value: unknown, schemas: Record<string, unknown>): unknown {
  if (Array.isArray(value)) return value.map((item) => hoist(item, schemas));
  if (value === null || typeof value !== 'object') return value;
  const { [SCHEMA_NAME]: name, ...rest } = value as Json;
  const inner = Object.fromEntries(Object.entries(rest).map(([key, item]) => [key, hoist(item, schemas)]));
  if (typeof name !== 'string') return inner;
  const known = schemas[name];
  if (known !== undefined && JSON.stringify(known) !== JSON.stringify(inner)) {
    throw new Error(`Two different schemas are named ${name} in the OpenAPI document.`);
  }
  schemas[name] = inner;
  return { $ref: `#/components/schemas/${name}` };
}

const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Any string of 1 to 255 characters: a retry with the same key and body replays the first answer.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

const webhookHeaders = Object.fromEntries(
  Object.entries(WEBHOOK_HEADERS).map(([name, description]) => [
    name,
    { in: 'header', name, required: true, description, schema: { type: 'string' } },
  ]),
);

function webhooks(): Json {
  return Object.fromEntries(
    Object.entries(WEBHOOK_EVENTS).map(([event, schema]) => [
      event,
      {
        post: {
          operationId: `webhook_${event.replace('.', '_')}`,
          summary: `The ${event} event`,
          description: 'POSTed to the endpoint set in the dashboard; verify a signature over the raw body.',
          tags: ['Webhook events'],
          security: [],
          parameters: Object.keys(WEBHOOK_HEADERS).map((name) => ({
            $ref: `#/components/parameters/${name}`,
          })),
          requestBody: { required: true, content: { 'application/json': { schema } } },
          responses: {
            200: { description: 'Any 2xx acknowledges the delivery; anything else is retried.' },
          },
        },
      },
    ]),
  );
}

/** The transformObject of @fastify/swagger: runs once per document build. */
export function completeDocument(built: { openapiObject: unknown } | { swaggerObject: unknown }): Json {
  if (!('openapiObject' in built)) throw new Error('Kassa documents OpenAPI 3.1 only');
  const document = built.openapiObject as OpenApiObject;
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      applyDocumented(operation);
      const marks = {
        asksProvider: operation[ASKS_PROVIDER] === true,
        checksPasswords: operation[CHECKS_PASSWORDS] === true,
        limitedPerAddress: operation[LIMITED_PER_ADDRESS] === true,
      };
      delete operation[ASKS_PROVIDER];
      delete operation[CHECKS_PASSWORDS];
      delete operation[LIMITED_PER_ADDRESS];
      operation.responses = withErrors(
        operation.responses ?? {},
        errorResponses(path, method, operation, marks),
      );
      if (method === 'post' && operation.security?.some((requirement) => 'ApiKey' in requirement)) {
        operation.parameters = [
          ...(operation.parameters ?? []),
          { $ref: '#/components/parameters/Idempotency-Key' },
        ];
      }
    }
  }
  document.webhooks = webhooks();
  const schemas: Record<string, unknown> = {};
  const hoisted = hoist({ ...document, components: {} }, schemas) as OpenApiObject;
  hoisted.components = {
    ...document.components,
    schemas: { ...schemas, Error: ERROR_SCHEMA },
    headers: {
      'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
      ...RATE_LIMIT_HEADERS,
    },
    parameters: { 'Idempotency-Key': IDEMPOTENCY_KEY, ...webhookHeaders },
  };
  return hoisted;
}
