// The error answers a served OpenAPI document gives its operations, for the tests that make each route
// answer a declared status (openapi-provider-503.test.ts, openapi-password-503.test.ts): the response of
// one route, checked for Retry-After and the {detail} body, and the routes whose response carries a cause.
import assert from 'node:assert/strict';

export interface DocumentedResponse {
  description?: string;
  headers?: Record<string, { $ref?: string }>;
  content?: Record<string, { schema?: { $ref?: string } }>;
}
export interface ServedDocument {
  paths: Record<string, Record<string, { responses: Record<string, DocumentedResponse> }>>;
}

/** The response `route` ('POST /api/…/') documents for `status`: it must exist, with Retry-After and {detail}. */
export function assertRetryAfterDocumented(
  document: ServedDocument,
  route: string,
  status: number,
): DocumentedResponse {
  const [method, path] = route.split(' ');
  const documented = document.paths[path]?.[method.toLowerCase()]?.responses[status];
  assert.ok(documented, `${route} answered ${status} but its OpenAPI operation does not document it`);
  assert.deepEqual(documented.headers?.['Retry-After'], { $ref: '#/components/headers/Retry-After' });
  assert.deepEqual(documented.content?.['application/json']?.schema, { $ref: '#/components/schemas/Error' });
  return documented;
}

/** The routes, sorted, whose `status` response names `cause` in its description. */
export function routesDocumenting(document: ServedDocument, status: number, cause: string): string[] {
  const routes: string[] = [];
  for (const [path, methods] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      if (operation.responses[status]?.description?.includes(cause))
        routes.push(`${method.toUpperCase()} ${path}`);
    }
  }
  return routes.sort();
}
