// Webhook delivery benchmark: throughput of a backlog to a loopback receiver (another process), and
// event→receiver latency at a steady event rate. Run: node bench/webhooks.ts [--pg postgres://...]
//   BENCH_EVENTS (default 20000), BENCH_RATE (events/s, default 500), BENCH_SECONDS (default 10).
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import inspector from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src/config.ts';
import { emitEvent } from '../src/modules/events/emit.ts';
import { createMerchant } from '../src/modules/organizations/service.ts';
import { webhookLoops } from '../src/modules/webhooks/loops.ts';
import { putEndpoint } from '../src/modules/webhooks/service.ts';
import { startService } from '../src/server.ts';
import { startWorker } from '../src/worker/runner.ts';

if (process.argv[2] === 'receiver') {
  // Counts requests; latency = arrival − the sent_at the payload carries.
  let count = 0;
  let latencies: number[] = [];
  const server = createServer((request, response) => {
    if (request.method === 'GET') {
      const sorted = [...latencies].sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? null;
      response.end(JSON.stringify({ count, p50: at(0.5), p99: at(0.99), max: at(1) }));
      if (request.url === '/reset') {
        count = 0;
        latencies = [];
      }
      return;
    }
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      count += 1;
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { sent_at?: number };
      if (body.sent_at) latencies.push(Date.now() - body.sent_at);
      response.end('ok');
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.send?.(typeof address === 'object' && address ? address.port : 0);
  });
} else {
  const events = Number(process.env.BENCH_EVENTS ?? 20_000);
  const rate = Number(process.env.BENCH_RATE ?? 500);
  const seconds = Number(process.env.BENCH_SECONDS ?? 10);
  const pg = process.argv.includes('--pg') ? process.argv[process.argv.indexOf('--pg') + 1] : undefined;

  const receiver = fork(new URL(import.meta.url).pathname, ['receiver'], {
    execArgv: ['--disable-warning=ExperimentalWarning'],
  });
  const port = await new Promise<number>((resolve) => receiver.once('message', (m) => resolve(Number(m))));
  const stats = async (path = '/') =>
    (await (await fetch(`http://127.0.0.1:${port}${path}`)).json()) as {
      count: number;
      p50: number;
      p99: number;
      max: number;
    };

  const dataDir = mkdtempSync(join(tmpdir(), 'kassa-bench-'));
  const schema = pg ? `bench_${process.pid}` : undefined;
  const config = loadConfig({
    KASSA_DATA_DIR: dataDir,
    KASSA_LOG_LEVEL: 'silent',
    KASSA_SECRET_KEY: 'b'.repeat(64),
    ...(pg ? { DATABASE_URL: pg, KASSA_DB_SCHEMA: schema } : {}),
  });
  const service = await startService(config, { http: false, worker: false });
  const { ctx } = service;
  const { organization } = await createMerchant(ctx, {
    organization: 'Bench',
    email: 'bench@bench.test',
    password: 'correct horse battery',
  });
  await putEndpoint(ctx, organization.id, `http://127.0.0.1:${port}/hook`);
  const emit = (db: typeof ctx.db, extra: Record<string, unknown>) =>
    emitEvent(db, {
      organizationId: organization.id,
      environment: 'production',
      type: 'webhook.test',
      subject: null,
      payload: { message: 'bench', ...extra },
      now: new Date().toISOString(),
    });

  // 1. Throughput: a backlog of events, then the worker starts.
  for (let i = 0; i < events; i += 500) {
    await ctx.db.transaction().execute(async (trx) => {
      for (let j = i; j < Math.min(events, i + 500); j += 1) await emit(trx, {});
    });
  }
  const profiler = process.env.BENCH_PROFILE ? new inspector.Session() : null;
  if (profiler) {
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.start');
  }
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const worker = startWorker(ctx, webhookLoops, (loop, error) => console.error(loop, error));
  while ((await stats()).count < events) await new Promise((resolve) => setTimeout(resolve, 50));
  const elapsed = (performance.now() - started) / 1000;
  const cpu = process.cpuUsage(cpuBefore);
  if (profiler && process.env.BENCH_PROFILE) {
    const { profile } = await profiler.post('Profiler.stop');
    writeFileSync(process.env.BENCH_PROFILE, JSON.stringify(profile));
  }
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  console.log(
    `throughput: ${events} deliveries in ${elapsed.toFixed(2)} s = ${Math.round(events / elapsed)}/s`,
  );
  // On a shared machine the wall clock lies; CPU time per delivery says what one core can do.
  console.log(
    `service CPU: ${cpuSeconds.toFixed(2)} s = ${((cpuSeconds * 1e6) / events).toFixed(0)} µs per delivery ` +
      `(≈ ${Math.round(events / cpuSeconds)}/s per core)`,
  );
  await stats('/reset');

  // 2. Latency at a steady rate: one event per committed transaction, as business code writes them.
  const total = rate * seconds;
  const tickMs = 10;
  const perTick = (rate * tickMs) / 1000;
  const begin = Date.now();
  for (let sent = 0; sent < total; ) {
    const due = Math.min(total, Math.floor(((Date.now() - begin) / tickMs + 1) * perTick));
    for (; sent < due; sent += 1) await emit(ctx.db, { sent_at: Date.now() });
    await new Promise((resolve) => setTimeout(resolve, tickMs));
  }
  while ((await stats()).count < total) await new Promise((resolve) => setTimeout(resolve, 50));
  const latency = await stats();
  console.log(
    `latency at ${rate} events/s for ${seconds} s: p50 ${latency.p50} ms, p99 ${latency.p99} ms, max ${latency.max} ms`,
  );

  await worker.stop();
  await service.close();
  receiver.kill();
  if (pg && schema) {
    const { default: pgLib } = await import('pg');
    const client = new pgLib.Client({ connectionString: pg });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await client.end();
  }
  rmSync(dataDir, { recursive: true, force: true });
}
