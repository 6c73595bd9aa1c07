// OpenAPI conformance of every response the e2e suite sees: call() hands each answer of a path under
// /api or /sandbox/api to checkResponse, which validates the JSON body against the response schema that
// the server's own /api/openapi.json declares for that operation and status, and checks that each of
// Kassa's own headers it carries (Kassa-*) is declared there. A mismatch throws, so the test that made
// the call fails, naming the route, the status and the first schema error (or the header). A 5xx is not
// checked, but for the 503s a route declares in its schema: the payment provider's (ASKS_PROVIDER in
// src/http/schemas.ts) and the full password line's (CHECKS_PASSWORDS); a route that answers one of them
// undocumented fails whichever test met it. A 4xx must be documented by its exact status: the document
// has no `4XX` catch-all (src/http/openapi-document.ts), so a route that answers a client error it does
// not list fails whichever test made it answer so (but for the 408 and 431 Node's HTTP parser answers
// before any route); a sandbox path (/sandbox/api/…) is matched only to the
// API-key operations, the only ones served there.
// checkWebhookBody does the same for a webhook body a receiver got, against the document's `webhooks`
// section.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { PROVIDER_UNAVAILABLE_DETAIL } from '../../src/http/errors.ts';
import { PASSWORD_CHECKS_BUSY_DETAIL } from '../../src/modules/auth/passwords.ts';

/** The details of the 503s that a route documents from a mark in its schema (see the comment above). */
const DECLARED_503_DETAILS: unknown[] = [PROVIDER_UNAVAILABLE_DETAIL, PASSWORD_CHECKS_BUSY_DETAIL];

/** Request line and headers too large, and a request not received in time (see checkResponse). */
const PARSER_STATUSES = new Set([408, 431]);

interface ResponseObject {
  content?: Record<string, { schema?: unknown }>;
  headers?: Record<string, unknown>;
}
interface Operation {
  security?: Record<string, string[]>[];
  requestBody?: { content?: Record<string, { schema?: unknown }> };
  responses?: Record<string, ResponseObject>;
}
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  webhooks?: Record<string, { post?: { requestBody?: { content?: Record<string, { schema?: unknown }> } } }>;
  components?: { schemas?: Record<string, unknown> };
}

interface CompiledOperation {
  method: string;
  path: string;
  pattern: RegExp;
  params: number;
  /** Served under /sandbox/api too: an API-key operation. */
  apiKey: boolean;
  responses: Record<string, ResponseObject>;
  validators: Map<string, ValidateFunction>;
}

const ajv = new Ajv2020({ strict: false, allErrors: false, addUsedSchema: false, validateFormats: true });
formats.default(ajv);

const documentsByServer = new Map<string, Promise<OpenApiDocument>>();
const operationsByServer = new Map<string, Promise<CompiledOperation[]>>();
const webhookValidatorsByServer = new Map<string, Promise<Map<string, ValidateFunction>>>();

/** The server's own /api/openapi.json, read once per server. */
function documentOf(serverUrl: string): Promise<OpenApiDocument> {
  let document = documentsByServer.get(serverUrl);
  if (!document) {
    document = fetch(`${serverUrl}/api/openapi.json`).then(
      (response) => response.json() as Promise<OpenApiDocument>,
    );
    documentsByServer.set(serverUrl, document);
  }
  return document;
}

/** Inlines #/components/schemas refs and drops $id, so each schema compiles on its own. */
function standalone(schema: unknown, components: Record<string, unknown>, depth = 0): unknown {
  if (depth > 50) throw new Error('OpenAPI schema nests too deeply (a recursive $ref?)');
  if (Array.isArray(schema)) return schema.map((item) => standalone(item, components, depth + 1));
  if (schema === null || typeof schema !== 'object') return schema;
  const entries = Object.entries(schema as Record<string, unknown>);
  const ref = (schema as { $ref?: unknown }).$ref;
  if (typeof ref === 'string' && ref.startsWith('#/components/schemas/')) {
    return standalone(components[ref.slice('#/components/schemas/'.length)], components, depth + 1);
  }
  return Object.fromEntries(
    entries
      .filter(([key]) => key !== '$id')
      .map(([key, value]) => [key, standalone(value, components, depth + 1)]),
  );
}

function compileDocument(document: OpenApiDocument): CompiledOperation[] {
  const operations: CompiledOperation[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    const source = path
      .replace(/\/+$/, '')
      .replace(/[.+?^$()|[\]\\]/g, '\\$&')
      .replace(/\{[^}]+\}/g, '[^/]+');
    for (const [method, operation] of Object.entries(methods)) {
      operations.push({
        method: method.toUpperCase(),
        path,
        pattern: new RegExp(`^${source}/?$`),
        params: (path.match(/\{/g) ?? []).length,
        apiKey: (operation.security ?? []).some((requirement) => 'ApiKey' in requirement),
        responses: operation.responses ?? {},
        validators: new Map(),
      });
    }
  }
  // A literal segment wins over a parameter (/refunds/verification-code/ before /refunds/{id}/).
  return operations.sort((a, b) => a.params - b.params);
}

function operationsOf(serverUrl: string): Promise<CompiledOperation[]> {
  let operations = operationsByServer.get(serverUrl);
  if (!operations) {
    operations = documentOf(serverUrl).then((served) => {
      const document = structuredClone(served);
      const components = document.components?.schemas ?? {};
      const compiled = compileDocument(document);
      for (const operation of compiled)
        for (const response of Object.values(operation.responses))
          for (const media of Object.values(response.content ?? {}))
            if (media.schema !== undefined) media.schema = standalone(media.schema, components);
      return compiled;
    });
    operationsByServer.set(serverUrl, operations);
  }
  return operations;
}

/**
 * The documented response for a status: the exact code, then its class (2XX…), then default; a client
 * error (4xx) only by its exact code.
 */
function responseFor(operation: CompiledOperation, status: number): [string, ResponseObject] | null {
  const clientError = status >= 400 && status < 500;
  const keys = clientError ? [String(status)] : [String(status), `${String(status)[0]}XX`, 'default'];
  for (const key of keys) {
    const response = operation.responses[key];
    if (response) return [key, response];
  }
  return null;
}

export interface ObservedResponse {
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  text: string;
  body: unknown;
  /** The answer's headers: each of Kassa's own (Kassa-*) must be declared on the documented response. */
  headers?: Headers;
}

/** Throws when a response to an /api or /sandbox/api path does not match its documented schema. */
export async function checkResponse(serverUrl: string, observed: ObservedResponse): Promise<void> {
  const rawPath = observed.path.split(/[?#]/)[0].replace(/\/{2,}/g, '/');
  const declared503 =
    observed.status === 503 &&
    DECLARED_503_DETAILS.includes((observed.body as { detail?: unknown } | null)?.detail);
  if (!/^\/(sandbox\/)?api\//.test(rawPath) || observed.method === 'HEAD') return;
  if (observed.status >= 500 && !declared503) return;
  // Node's HTTP parser answers these before any route, the same for every path (http/errors.ts,
  // clientError): the connection's answer, not an operation's.
  if (PARSER_STATUSES.has(observed.status)) return;
  const sandbox = rawPath.startsWith('/sandbox/');
  const path = rawPath.replace(/^\/sandbox\/api\//, '/api/');
  const operations = await operationsOf(serverUrl);
  const operation = operations.find(
    (op) => op.method === observed.method && op.pattern.test(path) && (!sandbox || op.apiKey),
  );
  if (!operation) return;
  const route = `${operation.method} ${operation.path}`;
  const documented = responseFor(operation, observed.status);
  if (!documented) {
    const detail = (observed.body as { detail?: unknown } | null)?.detail;
    throw new Error(
      `OpenAPI conformance: ${route} answered ${observed.status}, which it does not document` +
        `${typeof detail === 'string' ? ` (detail: ${JSON.stringify(detail)})` : ''}.`,
    );
  }
  const [key, response] = documented;
  const declared = new Set(Object.keys(response.headers ?? {}).map((name) => name.toLowerCase()));
  for (const name of observed.headers?.keys() ?? []) {
    if (name.startsWith('kassa-') && !declared.has(name))
      throw new Error(
        `OpenAPI conformance: ${route} ${observed.status} sent the header ${name}, which it does not declare.`,
      );
  }
  const media = response.content?.['application/json'];
  // A documented non-JSON body (the CSV exports) is checked by its own test, not here.
  const documentedTypes = Object.keys(response.content ?? {});
  if (documentedTypes.some((type) => type !== 'application/json' && observed.contentType?.startsWith(type)))
    return;
  if (!media?.schema) {
    if (observed.text !== '')
      throw new Error(`OpenAPI conformance: ${route} ${observed.status} documents no body but sent one.`);
    return;
  }
  if (!observed.contentType?.includes('json')) return;
  let validate = operation.validators.get(key);
  if (!validate) {
    validate = ajv.compile(media.schema as object);
    operation.validators.set(key, validate);
  }
  if (!validate(observed.body)) {
    const [first] = validate.errors ?? [];
    const where = first?.instancePath || '(body)';
    const extra = first?.params ? ` ${JSON.stringify(first.params)}` : '';
    throw new Error(
      `OpenAPI conformance: ${route} ${observed.status} does not match its schema: ${where} ${first?.message ?? 'is invalid'}${extra}`,
    );
  }
}

/** A validator per event, compiled from the request body the document's `webhooks` section gives it. */
function webhookValidatorsOf(serverUrl: string): Promise<Map<string, ValidateFunction>> {
  let validators = webhookValidatorsByServer.get(serverUrl);
  if (!validators) {
    validators = documentOf(serverUrl).then((document) => {
      const components = document.components?.schemas ?? {};
      const compiled = new Map<string, ValidateFunction>();
      for (const [event, item] of Object.entries(document.webhooks ?? {})) {
        const schema = item.post?.requestBody?.content?.['application/json']?.schema;
        if (schema !== undefined) compiled.set(event, ajv.compile(standalone(schema, components) as object));
      }
      return compiled;
    });
    webhookValidatorsByServer.set(serverUrl, validators);
  }
  return validators;
}

/**
 * Throws unless a webhook body (as a receiver got it) matches the schema the server's OpenAPI document
 * gives its event under `webhooks` (#/webhooks/{event}/post/requestBody).
 */
export async function checkWebhookBody(serverUrl: string, body: unknown): Promise<void> {
  const event = (body as { event?: unknown } | null)?.event;
  const validate = typeof event === 'string' ? (await webhookValidatorsOf(serverUrl)).get(event) : undefined;
  if (!validate) throw new Error(`OpenAPI conformance: the document has no webhook ${String(event)}.`);
  if (!validate(body)) {
    const [first] = validate.errors ?? [];
    const where = first?.instancePath || '(body)';
    const extra = first?.params ? ` ${JSON.stringify(first.params)}` : '';
    throw new Error(
      `OpenAPI conformance: a ${event} webhook body does not match its schema: ${where} ${first?.message ?? 'is invalid'}${extra}`,
    );
  }
}

/** A validator for the JSON request body the server's document gives an operation ('POST', '/api/…/'). */
export async function requestBodyValidator(
  serverUrl: string,
  method: string,
  path: string,
): Promise<ValidateFunction> {
  const document = await documentOf(serverUrl);
  const schema =
    document.paths[path]?.[method.toLowerCase()]?.requestBody?.content?.['application/json']?.schema;
  if (schema === undefined) throw new Error(`the document has no JSON request body for ${method} ${path}`);
  return ajv.compile(standalone(schema, document.components?.schemas ?? {}) as object);
}
