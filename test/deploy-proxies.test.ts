// The reverse-proxy examples in deploy/ keep Prometheus metrics from the internet: Kassa answers /metrics
// at every spelling its router folds onto that path (a trailing slash, repeated slashes, a query string,
// percent-encoded letters), so each config must refuse all of them and still pass every other path on.
// The variants are first proven against the real server; then each config's rule is checked the way the
// proxy matches (the decoded, slash-merged path, without the query string), and, where nginx or Caddy is
// installed (on PATH, or KASSA_TEST_NGINX / KASSA_TEST_CADDY), through the real proxy in front of Kassa.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ROOT } from './helpers/cli.ts';
import { freePort, startTestServer, type TestServer } from './helpers/server.ts';

/** Raw request targets (sent as written, not normalised by a URL parser) that Kassa answers with metrics. */
const METRICS_SPELLINGS = [
  '/metrics',
  '/metrics/',
  '/metrics//',
  '//metrics',
  '///metrics//',
  '/metrics?x=1',
  '/metrics/?x=1',
  '/%6detrics',
  '/metric%73/',
];
/** Paths the proxy must pass on (Kassa's own answer, 200 or its {detail} 404, comes back). */
const PASSED_ON = ['/healthz', '/api/openapi.json', '/metricsfoo', '/api/metrics/'];

const NGINX_CONF = readFileSync(join(ROOT, 'deploy', 'nginx.conf'), 'utf8');
const CADDYFILE = readFileSync(join(ROOT, 'deploy', 'Caddyfile'), 'utf8');

function get(port: number, target: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = request({ host: '127.0.0.1', port, path: target, method: 'GET' }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
    });
    sent.on('error', reject);
    sent.end();
  });
}

const isMetrics = (body: string) => body.includes('# HELP ');

/** The path a proxy matches its rules on: no query string, percent-decoded, repeated slashes merged. */
function proxyPath(target: string): string {
  return decodeURIComponent(target.split('?')[0]).replace(/\/{2,}/g, '/');
}

/** nginx: `location = P` matches P exactly, `location ^~ P` (or a plain prefix) every path starting with P. */
function nginxBlocks(path: string): boolean {
  const rules = [...NGINX_CONF.matchAll(/location\s+(=|\^~)?\s*(\S+)\s*\{\s*return 404;\s*\}/g)];
  return rules.some(([, modifier, pattern]) =>
    modifier === '=' ? path === pattern : path.startsWith(pattern),
  );
}

/** Caddy: `path P` matches P exactly, `path P*` every path starting with P (case-insensitively). */
function caddyBlocks(path: string): boolean {
  const line = /@metrics\s+path\s+([^\n]+)/.exec(CADDYFILE);
  assert.ok(line, 'the Caddyfile has no @metrics path matcher');
  assert.match(CADDYFILE, /respond\s+@metrics\s+404/);
  const lower = path.toLowerCase();
  return line[1]
    .trim()
    .split(/\s+/)
    .map((pattern) => pattern.toLowerCase())
    .some((pattern) => (pattern.endsWith('*') ? lower.startsWith(pattern.slice(0, -1)) : lower === pattern));
}

/** An executable from the environment variable, else from PATH (and /usr/sbin), else null. */
function binary(variable: string, name: string): string | null {
  const given = process.env[variable];
  if (given) return given;
  const found = spawnSync('sh', ['-c', `PATH="$PATH:/usr/sbin" command -v ${name}`], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : null;
}

async function waitForPort(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the proxy exited: ${output()}`);
    try {
      await get(port, '/healthz');
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`the proxy did not listen: ${output()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

describe('the reverse-proxy examples keep /metrics from the internet', () => {
  let server: TestServer;
  let kassaPort: number;
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  before(async () => {
    server = await startTestServer({ worker: false });
    kassaPort = Number(new URL(server.url).port);
  });
  after(async () => {
    for (const child of children) child.kill();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    await server.close();
  });

  /** Runs the proxy on a loopback port in front of the test server and checks every path through it. */
  async function throughProxy(start: (dir: string, port: number) => ChildProcess) {
    const dir = mkdtempSync(join(tmpdir(), 'kassa-proxy-'));
    dirs.push(dir);
    const port = await freePort();
    const child = start(dir, port);
    children.push(child);
    let output = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    await waitForPort(port, child, () => output);
    for (const target of METRICS_SPELLINGS) {
      const answer = await get(port, target);
      assert.equal(answer.status, 404, `${target} through the proxy`);
      assert.ok(!isMetrics(answer.body), `${target} reached the metrics`);
    }
    for (const target of PASSED_ON) {
      const direct = await get(kassaPort, target);
      const proxied = await get(port, target);
      assert.equal(proxied.status, direct.status, `${target} through the proxy`);
      assert.equal(proxied.body, direct.body, `${target} through the proxy`);
    }
  }

  test('Kassa itself answers every one of these spellings with the metrics', async () => {
    for (const target of METRICS_SPELLINGS) {
      const answer = await get(kassaPort, target);
      assert.equal(answer.status, 200, target);
      assert.ok(isMetrics(answer.body), target);
    }
  });

  test('each config refuses every spelling, and no other path, by the way its proxy matches', () => {
    for (const target of METRICS_SPELLINGS) {
      assert.ok(nginxBlocks(proxyPath(target)), `nginx.conf lets ${target} through`);
      assert.ok(caddyBlocks(proxyPath(target)), `the Caddyfile lets ${target} through`);
    }
    for (const target of PASSED_ON) {
      assert.ok(!nginxBlocks(proxyPath(target)), `nginx.conf blocks ${target}`);
      assert.ok(!caddyBlocks(proxyPath(target)), `the Caddyfile blocks ${target}`);
    }
  });

  const nginx = binary('KASSA_TEST_NGINX', 'nginx');
  test('through a real nginx', { skip: nginx ? false : 'nginx is not installed' }, async () => {
    await throughProxy((dir, port) => {
      // The deploy file as it is, on plain HTTP on a loopback port (the TLS lines need certificates).
      const site = NGINX_CONF.replace('server 127.0.0.1:3000;', `server 127.0.0.1:${kassaPort};`)
        .replace(/server \{\n {4}listen 80;[\s\S]*?\n\}\n/, '')
        .replace('listen 443 ssl http2;', `listen 127.0.0.1:${port};`)
        .replace(/^.*(listen \[::\]|ssl_).*\n/gm, '');
      writeFileSync(join(dir, 'kassa.conf'), site);
      const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
        (kind) => `${kind}_temp_path ${dir};`,
      );
      writeFileSync(
        join(dir, 'nginx.conf'),
        `daemon off; pid ${dir}/nginx.pid; error_log stderr; events {}\n` +
          `http { access_log off; ${temp.join(' ')} include ${dir}/kassa.conf; }\n`,
      );
      return spawn(nginx as string, ['-p', dir, '-c', join(dir, 'nginx.conf')], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
    });
  });

  const caddy = binary('KASSA_TEST_CADDY', 'caddy');
  test('through a real Caddy', { skip: caddy ? false : 'caddy is not installed' }, async () => {
    await throughProxy((dir, port) => {
      const site = CADDYFILE.replace('pay.example.com {', `http://127.0.0.1:${port} {`).replace(
        'reverse_proxy 127.0.0.1:3000',
        `reverse_proxy 127.0.0.1:${kassaPort}`,
      );
      writeFileSync(join(dir, 'Caddyfile'), `{\n\tadmin off\n}\n${site}`);
      return spawn(caddy as string, ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
      });
    });
  });
});
