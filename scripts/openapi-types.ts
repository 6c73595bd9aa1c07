// npm run openapi:types: regenerates sdk-samples/openapi-fetch/schema.d.ts from the document the server
// answers at /api/openapi.json (a throwaway test instance), after a change to a route schema.
import { writeFileSync } from 'node:fs';
import { generateTypes } from '../sdk-samples/openapi-fetch/generate.ts';
import { startTestServer } from '../test/helpers/server.ts';

const server = await startTestServer({ worker: false });
try {
  const response = await fetch(`${server.url}/api/openapi.json`);
  const types = await generateTypes((await response.json()) as Record<string, unknown>);
  writeFileSync(new URL('../sdk-samples/openapi-fetch/schema.d.ts', import.meta.url), types);
} finally {
  await server.close();
}
