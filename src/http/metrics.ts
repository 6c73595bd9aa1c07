// Prometheus metrics at /metrics: process defaults plus request counts and durations by route.
import client from 'prom-client';
import type { OutboxSignal } from '../db/outbox-signal.ts';
import { hashQueue, passwordChecks } from '../lib/crypto.ts';
import type { App } from './types.ts';

export function createMetrics(
  app: App,
  database: Pick<OutboxSignal, 'statements' | 'transactions'>,
  flaggedOperations: () => Promise<{ kind: string; count: number }[]>,
) {
  const registry = new client.Registry();
  // The event-loop delay histogram samples once a second, not every 10 ms (prom-client's default): its
  // timer alone woke the idle process 100 times a second, about 15 ms of CPU per second (bench/idle.ts).
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1000 });
  const duration = new client.Histogram({
    name: 'kassa_http_request_duration_seconds',
    help: 'HTTP request duration by route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  new client.Counter({
    name: 'kassa_password_hashes_total',
    help: 'Password hashes (scrypt) finished by this process',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(hashQueue.completed);
    },
  });
  new client.Counter({
    name: 'kassa_password_hashes_refused_total',
    help: 'Password checks refused at once because the hash queue or the line of checks was full (scope: key = one address, all)',
    labelNames: ['scope'],
    registers: [registry],
    collect() {
      this.reset();
      // Refused by the hash queue, or before their count by the bound on checks in progress.
      this.inc({ scope: 'key' }, hashQueue.refused.key + passwordChecks.refused.key);
      this.inc({ scope: 'all' }, hashQueue.refused.all + passwordChecks.refused.all);
    },
  });
  new client.Counter({
    name: 'kassa_db_statements_total',
    help: 'SQL statements this process sent to the database (BEGIN, COMMIT and ROLLBACK included)',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(database.statements);
    },
  });
  new client.Counter({
    name: 'kassa_db_transactions_total',
    help: 'Database transactions this process began',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(database.transactions);
    },
  });
  new client.Gauge({
    name: 'kassa_provider_operations_flagged',
    help: 'Provider calls flagged for review, by kind: each waits for a person (kassa operation resolve; renewal_charge: kassa renewal resolve)',
    labelNames: ['kind'],
    registers: [registry],
    // Read from the database at each scrape (the same figure in every process): one count over an index.
    async collect() {
      this.reset();
      try {
        const counts = await flaggedOperations();
        // The scrape's own count is not work of the service: kassa_db_statements_total leaves it out,
        // so that two scrapes around a request count that request's statements only.
        database.statements -= 1;
        // Renewal tries always have a series (0 when none), so an alert on it sees the figure fall back.
        this.set({ kind: 'renewal_charge' }, 0);
        for (const { kind, count } of counts) this.set({ kind }, count);
      } catch {
        // The database is unreachable (/readyz says so): the gauge is left out of this scrape.
      }
    },
  });
  // One labelled child per (method, route, status), found by a string key: prom-client would hash the
  // label object again at every observation.
  const children = new Map<string, client.Histogram.Internal<'method' | 'route' | 'status'>>();
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const key = `${request.method} ${reply.statusCode} ${route}`;
    let child = children.get(key);
    if (child === undefined) {
      child = duration.labels({ method: request.method, route, status: String(reply.statusCode) });
      children.set(key, child);
    }
    child.observe(reply.elapsedTime / 1000);
    done();
  });
  return { registry, contentType: registry.contentType, render: () => registry.metrics() };
}
