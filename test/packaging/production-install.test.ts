// The README's production install from a fresh clone: `npm ci --omit=dev && npm run build && npm start`
// on a server with Node 24 (here the pinned one), answering /healthz, serving the built dashboard and
// the docs, with no development dependency installed.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../helpers/server.ts';
import { NODE_24_BIN, ROOT, shOk, waitFor } from './helpers.ts';

describe('production install from a fresh clone', () => {
  let work: string;
  let clone: string;
  let service: ChildProcess | null = null;
  let output = '';

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'kassa-prod-'));
    clone = join(work, 'kassa');
    await shOk(`git clone --quiet "${ROOT}" "${clone}"`, { cwd: work });
  });
  after(async () => {
    if (service && service.exitCode === null && service.pid) process.kill(-service.pid, 'SIGTERM');
    rmSync(work, { recursive: true, force: true });
  });

  test('npm ci --omit=dev && npm run build && npm start answers /healthz and serves the dashboard', {
    timeout: 600_000,
  }, async () => {
    const installed = await shOk('npm ci --omit=dev --no-audit --no-fund 2>&1', {
      cwd: clone,
      timeoutMs: 300_000,
    });
    assert.doesNotMatch(installed, /npm error/);
    for (const devOnly of [
      'typescript',
      '@biomejs/biome',
      'playwright-core',
      'fast-check',
      'node',
      'standardwebhooks',
    ])
      assert.ok(!existsSync(join(clone, 'node_modules', devOnly)), `${devOnly} is a dev dependency`);
    const built = await shOk('npm run build 2>&1', { cwd: clone, timeoutMs: 300_000 });
    assert.match(built, /dashboard built in \d+ ms/);

    const port = await freePort();
    service = spawn('npm', ['start'], {
      cwd: clone,
      env: {
        PATH: `${NODE_24_BIN}${delimiter}${process.env.PATH ?? ''}`,
        HOME: process.env.HOME ?? work,
        PORT: String(port),
        HOST: '127.0.0.1',
        KASSA_DATA_DIR: join(work, 'data'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    service.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    service.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(`${base}/healthz`, 120_000, service).catch((error: Error) => {
      throw new Error(`${error.message}\n${output}`);
    });
    assert.deepEqual(await (await fetch(`${base}/healthz`)).json(), { status: 'ok' });
    assert.equal((await fetch(`${base}/readyz`)).status, 200);
    const dashboard = await fetch(`${base}/dashboard/`);
    assert.equal(dashboard.status, 200);
    assert.match(await dashboard.text(), /<script type="module"[^>]+src="\/dashboard\/assets\//);
    assert.equal((await fetch(`${base}/docs`)).status, 200);
    assert.equal((await fetch(`${base}/docs/assets/redoc.standalone.js`)).status, 200);
    assert.match(output, /dashboard is up to date/, 'npm start did not rebuild what npm run build made');
    assert.ok(existsSync(join(work, 'data', 'kassa.sqlite')));
    assert.equal(
      JSON.parse(readFileSync(join(clone, 'package.json'), 'utf8')).scripts.postinstall,
      undefined,
    );

    if (service.pid) process.kill(-service.pid, 'SIGTERM');
    const code = await new Promise<number | null>((resolve) => service?.once('exit', resolve));
    assert.ok(code === 0 || code === null, `exit ${code}\n${output}`);
  });
});
