// CSV exports of payments, refunds, payouts and the wallet ledger: the list filters apply, sandbox and
// production and organizations stay apart, a bad filter is a 400 {detail} before any CSV, and a
// 100,000-row export streams in constant memory (measured: the live heap after GC while it streams).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { sql } from 'kysely';
import { insertCompletedRefund } from './helpers/refund-rows.ts';
import {
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { createPaidPayment } from './helpers/wallet-fixtures.ts';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Parses RFC 4180 CSV (quoted fields may hold commas, quotes and line breaks). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quoted) {
      if (char === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (char === '"') quoted = false;
      else field += char;
    } else if (char === '"') quoted = true;
    else if (char === ',') {
      row.push(field);
      field = '';
    } else if (char === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += char;
  }
  return rows;
}

/** The CSV as records keyed by the header row. */
function records(text: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(text);
  return rows.map((row) => Object.fromEntries(header.map((name, index) => [name, row[index]])));
}

/**
 * Inserts `count` paid payments (and their checkouts), one second apart, in two statements generated
 * by the database itself.
 */
async function bulkPayments(server: TestServer, organizationId: number, count: number) {
  const db = server.ctx.db;
  const now = new Date().toISOString();
  const numbers = sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < ${count})`;
  const createdAt =
    DB_KIND === 'postgres'
      ? sql`to_char((now() - i * interval '1 second') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
      : sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-' || i || ' seconds')`;
  await sql`${numbers}
    insert into checkout_sessions (public_id, token_hash, organization_id, environment, currency, price_mode,
      tax_rate_bp, items, subtotal_ht, tax_amount, gross, billing_country, billing_first_name,
      billing_last_name, billing_email, expires_at, created_at, updated_at)
    select 'CObulk' || i, 'bulk-token-' || i, ${organizationId}, 'production', 'USD', 'TTC', 0, '[]', 1000, 0,
      1000, 'FR', 'Bulk', 'Payer', 'bulk@example.test', ${now}, ${createdAt}, ${now}
    from n`.execute(db);
  await sql`insert into payments (public_id, organization_id, environment, checkout_session_id, status,
      currency, gross, fee, net, gross_ht, fee_bp, fx_rate, net_usd, payer_email, products, provider,
      deposit_status, created_at, updated_at)
    select 'TXbulk' || substr(public_id, 7), organization_id, 'production', id, 'paid', 'USD', 1000, 29, 971,
      1000, 290, 1000000, 971, 'bulk' || substr(public_id, 7) || '@example.test',
      '[{"id":"adhoc","name":"Widget, large"}]', 'simulator', 'succeeded', created_at, ${now}
    from checkout_sessions where organization_id = ${organizationId} and public_id like 'CObulk%'`.execute(
    db,
  );
}

interface StreamMeasure {
  bytes: number;
  lines: number;
  /** Largest live heap above the baseline, after a full GC, sampled while the export streamed. */
  retainedPeak: number;
  rssPeak: number;
  ms: number;
  /** Distinct payment ids seen in the first column (kept as a compact set of numbers). */
  distinctIds: number;
}

/**
 * Downloads an export chunk by chunk (keeping nothing but a bitmap of the bulk ids seen, allocated
 * before the baseline), sampling the live heap every 1 MiB.
 */
async function measureExport(server: TestServer, token: string, path: string): Promise<StreamMeasure> {
  const seen = new Uint8Array(200_001);
  const decoder = new TextDecoder();
  let partial = '';
  let distinctIds = 0;
  collectGarbage();
  const baseline = process.memoryUsage().heapUsed;
  const started = performance.now();
  const response = await fetch(server.url + path, { headers: { authorization: `Token ${token}` } });
  assert.equal(response.status, 200);
  assert.ok(response.body);
  let bytes = 0;
  let lines = 0;
  let nextSample = 0;
  let retainedPeak = 0;
  let rssPeak = 0;
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    bytes += chunk.byteLength;
    for (const byte of chunk) if (byte === 10) lines++;
    const text = partial + decoder.decode(chunk, { stream: true });
    const cut = text.lastIndexOf('\n');
    partial = text.slice(cut + 1);
    for (const match of text.slice(0, cut).matchAll(/^TXbulk(\d+),/gm)) {
      const number = Number(match[1]);
      if (seen[number] === 0) distinctIds++;
      seen[number] = 1;
    }
    if (bytes >= nextSample) {
      nextSample = bytes + 1024 * 1024;
      collectGarbage();
      const memory = process.memoryUsage();
      retainedPeak = Math.max(retainedPeak, memory.heapUsed - baseline);
      rssPeak = Math.max(rssPeak, memory.rss);
    }
  }
  return { bytes, lines, retainedPeak, rssPeak, ms: performance.now() - started, distinctIds };
}

const MiB = 1024 * 1024;

describe('CSV exports', () => {
  let server: TestServer;
  let merchant: Merchant;
  let other: Merchant;
  let paidId = '';
  before(async () => {
    server = await startTestServer({ env: { KASSA_SIM_REFUND_DELAY_MS: '600000' } });
    merchant = await createTestMerchant(server, 'Export Shop');
    other = await createTestMerchant(server, 'Other Shop');
    paidId = (await createPaidPayment(server.ctx, { organizationId: merchant.organizationId, gross: 2500n }))
      .public_id;
    await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 1000n,
      currency: 'EUR',
    });
    await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 700n,
      status: 'failed',
      settle: false,
    });
    await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 4200n,
      environment: 'sandbox',
    });
    await createPaidPayment(server.ctx, { organizationId: other.organizationId, gross: 9900n });
  });
  after(() => server.close());

  const download = (path: string, who = merchant) => call<string>(server, 'GET', path, { token: who.token });

  test('payments: a CSV attachment with the list filters applied, production only by default', async () => {
    const all = await download('/api/exports/payments/');
    assert.equal(all.status, 200, all.text);
    assert.match(all.headers.get('content-type') ?? '', /^text\/csv; charset=utf-8/);
    assert.match(
      all.headers.get('content-disposition') ?? '',
      /^attachment; filename="kassa-payments-production-\d{4}-\d{2}-\d{2}\.csv"$/,
    );
    const rows = records(all.text);
    assert.equal(rows.length, 3);
    assert.deepEqual(rows.map((row) => [row.currency, row.amount, row.status]).sort(), [
      ['EUR', '10.00', 'paid'],
      ['USD', '25.00', 'paid'],
      ['USD', '7.00', 'failed'],
    ]);
    const paid = rows.find((row) => row.id === paidId);
    assert.equal(paid?.fee, '0.73');
    assert.equal(paid?.net_amount, '24.27');
    assert.equal(paid?.environment, 'production');
    assert.match(paid?.checkout_id ?? '', /^CO/);

    const filtered = records(
      (await download(`/api/exports/payments/?status=paid&currency=USD&search=${paidId.slice(0, 8)}`)).text,
    );
    assert.deepEqual(
      filtered.map((row) => row.id),
      [paidId],
    );
    const sandbox = records((await download('/api/exports/payments/?environment=sandbox')).text);
    assert.deepEqual(
      sandbox.map((row) => [row.amount, row.environment]),
      [['42.00', 'sandbox']],
    );
    const theirs = records((await download('/api/exports/payments/', other)).text);
    assert.deepEqual(
      theirs.map((row) => row.amount),
      ['99.00'],
    );
  });

  test('a bad filter is a 400 with a detail, before any CSV; no session is a 401', async () => {
    const bad = await call<{ detail: string }>(server, 'GET', '/api/exports/payments/?status=lost', {
      token: merchant.token,
    });
    assert.equal(bad.status, 400);
    assert.match(bad.headers.get('content-type') ?? '', /json/);
    assert.equal(
      bad.body.detail,
      'status: must be one of processing, pending, paid, failed, canceled, refund_pending, refunded.',
    );
    const badDate = await call<{ detail: string }>(
      server,
      'GET',
      '/api/exports/wallet/?created_at__gte=yesterday',
      {
        token: merchant.token,
      },
    );
    assert.equal(badDate.body.detail, 'created_at__gte: must be a valid ISO 8601 date-time.');
    const badEnvironment = await call<{ detail: string }>(
      server,
      'GET',
      '/api/exports/payouts/?environment=test',
      {
        token: merchant.token,
      },
    );
    assert.equal(badEnvironment.body.detail, 'environment: must be one of production, sandbox.');
    for (const what of ['payments', 'refunds', 'payouts', 'wallet']) {
      const anonymous = await call<{ detail: string }>(server, 'GET', `/api/exports/${what}/`);
      assert.equal(anonymous.status, 401);
      assert.ok(anonymous.body.detail);
    }
  });

  test('refunds, payouts and the wallet ledger export their rows, per environment', async () => {
    await insertCompletedRefund(server.ctx, {
      organizationId: merchant.organizationId,
      paymentPublicId: paidId,
      publicId: 'RFexport000000001',
      reason: '=HYPERLINK("http://evil.example","click"), with "quotes"',
    });
    const refunds = await download('/api/exports/refunds/');
    const [refund] = records(refunds.text);
    assert.equal(refund.id, 'RFexport000000001');
    assert.equal(refund.transaction_id, paidId);
    // Text a spreadsheet would run as a formula is made inert; quotes and commas survive the round trip.
    assert.equal(refund.reason, `'=HYPERLINK("http://evil.example","click"), with "quotes"`);
    assert.deepEqual(records((await download('/api/exports/refunds/?status=failed')).text), []);
    assert.deepEqual(records((await download('/api/exports/refunds/?environment=sandbox')).text), []);

    await call(server, 'PUT', '/api/payouts/destination/', {
      token: merchant.token,
      body: { type: 'iban', account_holder: 'Export Shop', iban: 'NL91ABNA0417164300' },
    });
    const created = await call<{ id: string }>(server, 'POST', '/api/payouts/', {
      token: merchant.token,
      body: { amount: '3.00' },
    });
    const [payout] = records((await download('/api/exports/payouts/')).text);
    assert.deepEqual(payout, {
      ...payout,
      id: created.body.id,
      status: 'pending',
      amount: '3.00',
      destination: 'NL IBAN •••• 4300',
      account_holder: 'Export Shop',
    });
    assert.deepEqual(records((await download('/api/exports/payouts/?environment=sandbox')).text), []);

    const ledger = records((await download('/api/exports/wallet/')).text);
    assert.deepEqual(ledger[0], {
      ...ledger[0],
      type: 'payout_hold',
      reference: created.body.id,
      held_change: '3.00',
    });
    assert.ok(ledger.some((row) => row.type === 'settlement' && row.reference === paidId));
    const sandboxLedger = records((await download('/api/exports/wallet/?environment=sandbox')).text);
    assert.deepEqual(
      sandboxLedger.map((row) => row.type),
      ['settlement'],
    );
    const future = records(
      (await download(`/api/exports/wallet/?created_at__gte=${encodeURIComponent('2999-01-01T00:00:00Z')}`))
        .text,
    );
    assert.deepEqual(future, []);
    assert.deepEqual(records((await download('/api/exports/wallet/', other)).text).length, 1);
  });

  test('a 100,000-row export streams in constant memory', { timeout: 300_000 }, async () => {
    const bulk = await createTestMerchant(server, 'Bulk Shop');
    const inserting = performance.now();
    await bulkPayments(server, bulk.organizationId, 100_000);
    const insertMs = performance.now() - inserting;
    const small = await measureExport(server, bulk.token, '/api/exports/payments/?search=TXbulk1000');
    const large = await measureExport(server, bulk.token, '/api/exports/payments/');
    assert.equal(large.lines, 100_001, 'a header and 100,000 rows');
    assert.equal(large.distinctIds, 100_000, 'every payment exactly once');
    console.log(
      `[${DB_KIND}] 100,000-row payments export: ${(large.bytes / MiB).toFixed(1)} MiB in ${(large.ms / 1000).toFixed(1)} s; ` +
        `live heap above baseline at most ${(large.retainedPeak / MiB).toFixed(1)} MiB ` +
        `(a ${small.lines - 1}-row export: ${(small.retainedPeak / MiB).toFixed(1)} MiB); ` +
        `RSS peak ${(large.rssPeak / MiB).toFixed(0)} MiB; rows inserted in ${(insertMs / 1000).toFixed(1)} s`,
    );
    // Holding the export would take more than its own size in heap; streaming holds about one batch.
    assert.ok(large.bytes > 10 * MiB, `the export is ${large.bytes} bytes`);
    assert.ok(
      large.retainedPeak < 8 * MiB,
      `the live heap grew by ${(large.retainedPeak / MiB).toFixed(1)} MiB while streaming`,
    );
  });
});
