// The image's HEALTHCHECK, run as Docker runs it (shell form: /bin/sh -c with the container's
// environment), asks the port the service really listens on: KASSA_PORT, else PORT, else 3000, the
// service's own rule (src/config.ts listenPort). It used to ask 127.0.0.1:3000 whatever the port.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ROOT } from './helpers/cli.ts';
import { freePort, startTestServer, type TestServer } from './helpers/server.ts';

const DOCKERFILE = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

/** The HEALTHCHECK's command, run the way Docker runs its form, with only `env` (and PATH) set. */
async function healthCheck(env: Record<string, string>): Promise<number | null> {
  const command = /^HEALTHCHECK[^\n]*\\\n\s*CMD (.+)$/m.exec(DOCKERFILE)?.[1];
  assert.ok(command, 'the Dockerfile has no HEALTHCHECK … CMD');
  // Exec form (a JSON array) runs as it is; shell form through /bin/sh -c.
  const [file, ...args] = command.startsWith('[')
    ? (JSON.parse(command) as string[])
    : ['/bin/sh', '-c', command];
  // Not spawnSync: the server under test answers from this same process.
  const child = spawn(file, args, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env } });
  const timer = setTimeout(() => child.kill(), 10_000);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return code;
}

describe('the Dockerfile health check', () => {
  let server: TestServer;
  let port: string;
  let elsewhere: string;
  before(async () => {
    server = await startTestServer({ worker: false });
    port = new URL(server.url).port;
    elsewhere = String(await freePort());
  });
  after(() => server.close());

  test('the image sets no KASSA_PORT of its own, so a platform PORT applies', () => {
    assert.doesNotMatch(DOCKERFILE, /^\s*KASSA_PORT=/m);
  });

  test('it follows KASSA_PORT, else PORT', async () => {
    assert.equal(await healthCheck({ KASSA_PORT: port }), 0);
    assert.equal(await healthCheck({ PORT: port }), 0);
    assert.equal(await healthCheck({ KASSA_PORT: port, PORT: elsewhere }), 0);
    // An empty KASSA_PORT is unset for the service too.
    assert.equal(await healthCheck({ KASSA_PORT: '', PORT: port }), 0);
  });

  test('it fails when nothing answers on that port', async () => {
    assert.equal(await healthCheck({ KASSA_PORT: elsewhere }), 1);
    assert.equal(await healthCheck({ PORT: elsewhere, KASSA_PORT: '' }), 1);
  });
});
