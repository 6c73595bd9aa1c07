// Schema pieces shared by several modules: request fields, and the building blocks of the response
// schemas (documentation only: responses are serialized with JSON.stringify, see app.ts).
import { type TProperties, type TSchema, Type } from 'typebox';

/** The keyword that names a schema: the OpenAPI document lists it once in components.schemas and $refs it. */
export const SCHEMA_NAME = 'x-schema-name';

/** `schema`, named in the OpenAPI document (see SCHEMA_NAME); validation ignores the keyword. */
export const Named = <T extends TSchema>(name: string, schema: T): T =>
  Object.assign(schema, { [SCHEMA_NAME]: name });

/**
 * Route-schema keyword for fields a handler checks itself, so that a bad value keeps the interface's
 * message: their precise types, for the OpenAPI document only (openapi-document.ts puts them in place
 * of the lenient ones; Ajv never sees them).
 */
export const DOCUMENTED = 'x-documented';
export interface DocumentedFields {
  query?: TProperties;
  body?: TProperties;
}
export const documented = (fields: DocumentedFields): Record<string, unknown> => ({ [DOCUMENTED]: fields });

/**
 * Route-schema keyword of a route whose handler asks the payment provider while the caller waits, outside
 * callProvider (which turns a call without an answer into the `unknown` outcome): a provider that does
 * not answer makes the route answer 503 with Retry-After (http/errors.ts). openapi-document.ts documents
 * that 503 from this mark, so the route declares it where it is written; a list of paths kept beside the
 * document went stale without anything failing. test/openapi-provider-503.test.ts provokes the 503 on
 * every marked route and checks that the marked routes are exactly those, and call() in every e2e test
 * refuses a provider 503 that its route does not document (test/helpers/conformance.ts).
 */
export const ASKS_PROVIDER = 'x-asks-provider';
export const asksProvider: Record<string, unknown> = { [ASKS_PROVIDER]: true };

/**
 * Route-schema keyword of a route whose handler checks or hashes a dashboard password: the check waits
 * in the bounded hash line (auth/passwords.ts), which refuses at once with 429 when the caller's address
 * has its share in line and 503 when the line is full, both with Retry-After. openapi-document.ts
 * documents both from this mark, as it does the provider's 503 from ASKS_PROVIDER, and
 * test/openapi-password-503.test.ts makes every marked route answer them and checks that the marked
 * routes are exactly those; call() refuses such a 503 on a route that does not document it.
 */
export const CHECKS_PASSWORDS = 'x-checks-passwords';
export const checksPasswords: Record<string, unknown> = { [CHECKS_PASSWORDS]: true };

/**
 * Route-schema keyword of a public route behind a per-address rate limit (the public limit: the hosted
 * checkout, payment-link and signup pages, the test receiver, the provider webhooks it guards, the
 * simulator's challenge): past it the route answers 429 with Retry-After and RateLimit-*.
 * openapi-document.ts documents that 429 from this mark (API-key routes get it from their key's limit);
 * a public route without it, such as the password-reset request (its mails are limited per email without
 * telling the caller) or Stripe's webhook, documents no 429. test/rate-limits.test.ts calls every
 * operation past the limits and checks that those answering 429 are exactly those documenting it.
 */
export const LIMITED_PER_ADDRESS = 'x-limited-per-address';
export const limitedPerAddress: Record<string, unknown> = { [LIMITED_PER_ADDRESS]: true };

/** Documented list parameters (see `documented`): page numbers and an ordering over `fields`. */
export const PageParams = {
  page: Type.Integer({ minimum: 1, description: 'From 1.' }),
  page_size: Type.Integer({ minimum: 1, maximum: 100, description: 'Default 20, at most 100.' }),
};
export const Ordering = (fields: readonly string[]) =>
  Type.Enum([...fields, ...fields.map((field) => `-${field}`)], {
    description: `${fields.join(', ')}; prefix - for descending (default -created_at).`,
  });
export const DateTimeParam = (description: string) => Type.String({ format: 'date-time', description });
/** The dashboard lists' created_at__gte / created_at__lte. */
export const CreatedRangeParams = {
  created_at__gte: DateTimeParam('Created on or after.'),
  created_at__lte: DateTimeParam('Created on or before.'),
};

export const ErrorBody = Named('Error', Type.Object({ detail: Type.String() }, { $id: 'Error' }));

/**
 * An error answer a route declares in its own response schema because it is particular to that route (e.g.
 * `409: ErrorResponse('…')`): the {detail} body, with what the status means there as the response's
 * description. The errors a route answers by its kind (401, 404, 429…) are added by openapi-document.ts.
 */
export const ErrorResponse = (description: string) =>
  Named('Error', Type.Object({ detail: Type.String() }, { 'x-response-description': description }));

export const Email = Type.String({ format: 'email', maxLength: 254 });
export const Url = Type.String({ format: 'uri', maxLength: 2048 });
export const Currency = Type.Union([Type.Literal('USD'), Type.Literal('EUR')]);
export const DecimalString = Type.String({ pattern: '^\\d+(\\.\\d{1,2})?$', maxLength: 18 });
export const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });

/** `schema` or null. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A response object: every field listed, nothing else sent. */
export const Shape = <T extends TProperties>(properties: T, description?: string) =>
  Type.Object(properties, { additionalProperties: false, ...(description ? { description } : {}) });

/** An amount as the API sends it: a decimal string with two decimals ("12.50"; "-3.00" for debits). */
export const Money = Type.String({ pattern: '^-?\\d+\\.\\d{2}$', examples: ['12.50'] });
export const Timestamp = Type.String({ format: 'date-time' });
export const Environment = Type.Union([Type.Literal('production'), Type.Literal('sandbox')]);

/** Django REST Framework style page: {count, next, previous, results}. */
export const Page = <T extends TSchema>(item: T, description: string) =>
  Shape(
    {
      count: Type.Integer({ minimum: 0 }),
      next: Nullable(Type.String({ format: 'uri' })),
      previous: Nullable(Type.String({ format: 'uri' })),
      results: Type.Array(item),
    },
    description,
  );

/** A 204: no body (typed as undefined so handlers call reply.send() with nothing). */
export const NoContent = Type.Unsafe<undefined>(Type.Null({ description: 'No content.' }));
