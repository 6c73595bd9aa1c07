// The role matrix on every dashboard-session route, generated from the one table
// (src/modules/members/permissions.ts): for each route and each role, a request with a fresh session of
// that role is either let through (whatever the route then answers, it is not a 403) or refused with
// 403 "Your role (<role>) does not allow …". The OpenAPI document carries the same table, and a session
// route missing from it stops the app from starting, so a new route cannot ship without a permission.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify from 'fastify';
import { registerOpenApi } from '../src/http/openapi.ts';
import type { App } from '../src/http/types.ts';
import { SESSION_ROUTES } from '../src/modules/members/permissions.ts';
import { forbiddenDetail, PERMISSIONS, ROLES, type Role } from '../src/modules/members/roles.ts';
import { addMember } from './helpers/accounts.ts';
import { call, createTestMerchant, DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';

interface Operation {
  security?: Record<string, string[]>[];
  'x-kassa-permission'?: string;
  'x-kassa-recent-auth'?: boolean;
}

/** A path for the route: every :param becomes an id that names nothing. */
function concretePath(url: string): string {
  return url.replace(/:[A-Za-z_]+/g, '999999');
}

describe(`permissions of every session route (${DB_KIND})`, () => {
  let server: TestServer;
  const sessions = new Map<Role, { email: string; password: string; token: string }>();

  before(async () => {
    // Development without SMTP: the development mailbox's routes exist only there, and they are in the table.
    server = await startTestServer({ worker: false, env: { KASSA_ENV: 'development' } });
    const owner = await createTestMerchant(server, 'Matrix');
    sessions.set('owner', owner);
    for (const role of ROLES.filter((r) => r !== 'owner'))
      sessions.set(role, await addMember(server, owner, role));
  });
  after(() => server.close());

  test('the OpenAPI document shows each session route with the permission of the table, and the table has no route the app lacks', async () => {
    const document = (await (await fetch(`${server.url}/api/openapi.json`)).json()) as {
      paths: Record<string, Record<string, Operation>>;
    };
    const documented = new Set<string>();
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        if (!operation.security?.some((scheme) => 'SessionToken' in scheme)) continue;
        const key = `${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`;
        const rule = SESSION_ROUTES[key];
        assert.ok(rule, `${key} is a session route without a permission`);
        assert.equal(operation['x-kassa-permission'], rule.permission, key);
        assert.equal(operation['x-kassa-recent-auth'], rule.recent, key);
        documented.add(key);
      }
    }
    assert.deepEqual(
      Object.keys(SESSION_ROUTES).filter((key) => !documented.has(key)),
      [],
      'routes in the table that the app does not have',
    );
  });

  test('a session route without a permission stops the app from starting, naming the route and the table', async () => {
    const app = Fastify().withTypeProvider<TypeBoxTypeProvider>() as unknown as App;
    await registerOpenApi(app, { publicUrl: 'http://localhost:3000' });
    assert.throws(
      () => app.get('/api/organization/unlisted/', async () => ({})),
      /GET \/api\/organization\/unlisted\/ has no permission: add it to SESSION_ROUTES in src\/modules\/members\/permissions\.ts/,
    );
  });

  for (const [key, rule] of Object.entries(SESSION_ROUTES)) {
    const [method, url] = key.split(' ');
    describe(key, () => {
      for (const role of ROLES) {
        const allowed = (PERMISSIONS[rule.permission].roles as readonly Role[]).includes(role);
        test(`${role}: ${allowed ? 'allowed' : '403'}`, async () => {
          let token = sessions.get(role)?.token as string;
          if (key === 'POST /api/auth/logout/') {
            // Logging out ends the session: use one of its own.
            const who = sessions.get(role) as { email: string; password: string };
            const login = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
              body: { email: who.email, password: who.password },
            });
            token = login.body.token;
          }
          const response = await call(server, method, concretePath(url), {
            token,
            body: method === 'GET' || method === 'DELETE' ? undefined : {},
          });
          if (allowed) {
            assert.notEqual(response.status, 403, `${key} as ${role}: ${response.text}`);
          } else {
            assert.equal(response.status, 403, `${key} as ${role}: ${response.text}`);
            assert.equal(response.body.detail, forbiddenDetail(role, rule.permission));
          }
        });
      }
    });
  }
});
