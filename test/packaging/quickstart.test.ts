// docs/quickstart.md, run as written from a fresh clone: `npm install && npm start`, then every `sh`
// block in order in one shell (so the variables carry over, as in a reader's terminal), then the SDK's
// TypeScript example in a project of its own with the packed @kassa/sdk. Only the port differs: the
// service gets a free one through PORT (as the quickstart says), and the commands' localhost:3000
// follows it.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../helpers/server.ts';
import { ROOT, sh, shOk, waitFor } from './helpers.ts';

/** The fenced blocks of a Markdown file, with their language, in order. */
function codeBlocks(markdown: string): { language: string; code: string }[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((match) => ({
    language: match[1],
    code: match[2],
  }));
}

describe('the quickstart, from a fresh clone, as written', () => {
  let work: string;
  let clone: string;
  let service: ChildProcess | null = null;
  let log = '';

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'kassa-quickstart-'));
    clone = join(work, 'kassa');
    await shOk(`git clone --quiet "${ROOT}" "${clone}"`, { cwd: work });
  });
  after(() => {
    if (service && service.exitCode === null && service.pid) process.kill(-service.pid, 'SIGTERM');
    rmSync(work, { recursive: true, force: true });
  });

  test('a sandbox key, a checkout paid on the hosted step, the signed webhook, a refund, and the SDK', {
    timeout: 900_000,
  }, async () => {
    const blocks = codeBlocks(readFileSync(join(clone, 'docs', 'quickstart.md'), 'utf8'));
    const port = await freePort();
    const localhost = (code: string) => code.replaceAll('localhost:3000', `localhost:${port}`);
    const [start, ...shell] = blocks.filter((block) => block.language === 'sh');
    assert.match(start.code, /^npm install && npm start/);

    // 0. npm install && npm start (the second part runs in the background, as in its own terminal).
    await shOk('npm install --no-audit --no-fund 2>&1', { cwd: clone, timeoutMs: 600_000 });
    service = spawn('npm', ['start'], {
      cwd: clone,
      env: { ...process.env, PORT: String(port), KASSA_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    service.stdout?.on('data', (chunk: Buffer) => {
      log += chunk.toString();
    });
    service.stderr?.on('data', (chunk: Buffer) => {
      log += chunk.toString();
    });
    await waitFor(`http://localhost:${port}/healthz`, 180_000, service).catch((error: Error) => {
      throw new Error(`${error.message}\n${log}`);
    });

    // Steps 0–6 and the SDK's install, in one shell; the reader's own project is ../my-shop.
    const myShop = join(work, 'my-shop');
    mkdirSync(myShop);
    await shOk('npm init -y >/dev/null', { cwd: myShop });
    const script = [
      'set -euo pipefail',
      ...shell.map((block) => localhost(block.code)),
      'echo "QUICKSTART_KEY=$KEY"',
    ].join('\n');
    const run = await sh(script, { cwd: clone, timeoutMs: 300_000 });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}\n${log}`);
    const out = run.stdout;
    const key = /QUICKSTART_KEY=(kassa_test_\w+)/.exec(out)?.[1];
    assert.ok(key, out);
    assert.match(out, /"status":"SUCCESS","payment_status":"paid","transaction_id":"(TX\w+)"/);
    const payment = /"transaction_id":"(TX\w+)"/.exec(out)?.[1] ?? '';
    assert.match(out, new RegExp(`"id":"${payment}".*"client_reference_id":"order-1001"`));
    assert.match(out, /"signature_valid": true/);
    assert.match(out, /"order_id": "CO\w+",\s+"status": "paid",\s+"livemode": false/);
    assert.match(out, new RegExp(`"id":"RF\\w+","transaction":"${payment}","status":"processing"`));
    assert.match(
      out,
      new RegExp(
        `"count":1,"next":null,"previous":null,"results":\\[\\{"id":"RF\\w+","transaction_id":"${payment}"`,
      ),
    );

    // The SDK example, in the reader's project, with the key from step 1.
    const [sdkExample] = blocks.filter((block) => block.language === 'ts');
    assert.match(sdkExample.code, /from '@kassa\/sdk'/);
    writeFileSync(join(myShop, 'shop.mts'), localhost(sdkExample.code));
    const sdkRun = await sh('node --disable-warning=ExperimentalWarning shop.mts', {
      cwd: myShop,
      env: { KASSA_API_KEY: key },
      timeoutMs: 120_000,
    });
    assert.equal(sdkRun.code, 0, sdkRun.stderr);
    assert.match(sdkRun.stdout, new RegExp(payment), 'listAll finds the payment of order 1001');
  });
});
