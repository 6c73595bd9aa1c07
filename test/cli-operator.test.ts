// The operator's commands: kassa org show / org set (commercial terms, with the refusals) and
// kassa payout list, run as child processes against the same database as a running server.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { parseArgs } from 'node:util';
import { commands } from '../src/cli/commands.ts';
import { loadConfig } from '../src/config.ts';
import { kassa } from './helpers/cli.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { createPaidPayment } from './helpers/wallet-fixtures.ts';

type Json = Record<string, unknown>;

describe(`kassa org and kassa payout list (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;

  before(async () => {
    server = await startTestServer();
    merchant = await createTestMerchant(server, 'Terms Shop');
  });
  after(() => server.close());

  const run = (...args: string[]) => kassa(args, server.env);

  /** `kassa org set <args>` in this process, as src/cli/main.ts runs a command, with its stderr. */
  async function orgSetInProcess(args: string[]): Promise<{ code: number; stderr: string }> {
    const command = commands['org set'];
    const { values, positionals } = parseArgs({
      args,
      options: command.options,
      allowPositionals: true,
      strict: true,
    });
    const lines: string[] = [];
    const original = { error: console.error, log: console.log };
    console.error = (...parts: unknown[]) => lines.push(parts.join(' '));
    console.log = () => {};
    try {
      const code = await command.run({ values, positionals, config: () => loadConfig(server.env) });
      return { code, stderr: lines.join('\n') };
    } finally {
      Object.assign(console, original);
    }
  }
  const json = (stdout: string) => JSON.parse(stdout) as Json;

  test('org show prints the organization with its default terms', async () => {
    const shown = await run('org', 'show', merchant.slug);
    assert.equal(shown.code, 0, shown.stderr);
    const organization = json(shown.stdout);
    assert.equal(organization.slug, merchant.slug);
    assert.deepEqual(
      [
        organization.fee_percent,
        organization.rolling_reserve_percent,
        organization.rolling_reserve_days,
        organization.min_payment,
        organization.max_payment,
        organization.tax_rate_percent,
        organization.price_mode,
      ],
      ['2.90', '10.00', 90, '0.50', '100000.00', '0.00', 'TTC'],
    );
    const unknown = await run('org', 'show', 'no-such-shop');
    assert.deepEqual(
      [unknown.code, unknown.stderr.trim()],
      [1, 'kassa: no organization with slug "no-such-shop".'],
    );
  });

  test('org set changes every term, prints the changes, and new checkouts follow them', async () => {
    const set = await run(
      'org',
      'set',
      merchant.slug,
      '--fee-percent',
      '3.50',
      '--reserve-percent',
      '5',
      '--reserve-days',
      '30',
      '--min-payment',
      '1.00',
      '--max-payment',
      '500',
      '--tax-rate',
      '20',
      '--pricing-mode',
      'TAX_EXCLUSIVE',
    );
    assert.equal(set.code, 0, set.stderr);
    const result = json(set.stdout) as { organization: Json; changed: Json };
    assert.deepEqual(result.changed, {
      fee_percent: { from: '2.90', to: '3.50' },
      rolling_reserve_percent: { from: '10.00', to: '5.00' },
      rolling_reserve_days: { from: 90, to: 30 },
      min_payment: { from: '0.50', to: '1.00' },
      max_payment: { from: '100000.00', to: '500.00' },
      tax_rate_percent: { from: '0.00', to: '20.00' },
      price_mode: { from: 'TTC', to: 'HT' },
    });
    const organization = await call<Json>(server, 'GET', '/api/organization/', { token: merchant.token });
    assert.deepEqual(
      [organization.body.fee_percent, organization.body.min_payment, organization.body.price_mode],
      ['3.50', '1.00', 'HT'],
    );
    const audit = await call<{ results: Json[] }>(
      server,
      'GET',
      '/api/organization/audit-log/?action=organization.terms_changed',
      { token: merchant.token },
    );
    assert.equal(audit.status, 200, audit.text);
    const [entry] = audit.body.results;
    assert.deepEqual((entry?.actor as Json | undefined)?.type, 'operator', audit.text);
    assert.deepEqual(entry?.target, { type: 'organization', id: merchant.slug });
    assert.deepEqual((entry?.details as Json | undefined)?.fee_bp, { from: 290, to: 350 });

    const key = await createTestKey(server, merchant);
    const checkout = (unitPrice: number) =>
      call<Json>(server, 'POST', '/api/checkout/create/', {
        apiKey: key,
        body: {
          billing_country: 'FR',
          billing_first_name: 'Ada',
          billing_last_name: 'Lovelace',
          billing_email: 'ada@example.com',
          products: [{ name: 'Widget', unit_price: unitPrice }],
        },
      });
    // HT 0.80 + 20 % tax = 0.96 < 1.00; HT 450 + 20 % = 540 > 500.
    assert.match(String((await checkout(0.8)).body.detail), /below the minimum payment of 1\.00/);
    assert.match(String((await checkout(450)).body.detail), /above the maximum payment of 500\.00/);
    assert.equal((await checkout(10)).status, 201);
  });

  test('org set refuses a fee that leaves nothing to the merchant, inconsistent limits and bad values', async () => {
    const cases: [string[], RegExp][] = [
      [['--fee-percent', '100'], /leaves nothing to the merchant of a 1\.00 payment/],
      [['--fee-percent', '99.99'], /leaves nothing to the merchant/],
      [['--fee-percent', '100.01'], /--fee-percent must be at most 100/],
      [['--fee-percent', 'abc'], /--fee-percent must be a percentage/],
      [['--fee-percent', '2.999'], /at most two decimals/],
      [['--min-payment', '600'], /minimum payment \(600\.00\) may not exceed the maximum \(500\.00\)/],
      [['--min-payment', '0'], /--min-payment must be at least 0\.01/],
      [['--reserve-days=-1'], /--reserve-days must be a whole number/],
      [['--reserve-days', '4000'], /--reserve-days must be a whole number of days from 0 to 3650/],
      [['--pricing-mode', 'GROSS'], /--pricing-mode must be HT/],
      [[], /needs at least one option/],
    ];
    // The first as an operator runs it (exit code and all); the rest in this process, which is faster.
    const first = await run('org', 'set', merchant.slug, ...cases[0][0]);
    assert.equal(first.code, 1);
    assert.match(first.stderr, cases[0][1]);
    for (const [options, message] of cases) {
      const result = await orgSetInProcess([merchant.slug, ...options]);
      assert.equal(result.code, 1, options.join(' '));
      assert.match(result.stderr, message, options.join(' '));
      assert.equal(result.stderr.trim().split('\n').length, 1);
    }
    const missing = await orgSetInProcess(['no-such-shop', '--fee-percent', '1']);
    assert.match(missing.stderr, /no organization with slug "no-such-shop"/);
    const unchanged = json((await run('org', 'show', merchant.slug)).stdout);
    assert.deepEqual([unchanged.fee_percent, unchanged.min_payment], ['3.50', '1.00'], 'nothing was written');
    // A fee that still leaves a cent of the smallest payment is accepted.
    const edge = await orgSetInProcess([merchant.slug, '--fee-percent', '99', '--min-payment', '1.00']);
    assert.equal(edge.code, 0, edge.stderr);
    assert.equal((await orgSetInProcess([merchant.slug, '--fee-percent', '3.50'])).code, 0);
  });

  test('payout list shows payout requests across organizations, filtered by status and organization', async () => {
    const other = await createTestMerchant(server, 'Payout Shop');
    await createPaidPayment(server.ctx, { organizationId: other.organizationId, gross: 10_000n });
    const account = await call(server, 'PUT', '/api/payouts/destination/', {
      token: other.token,
      body: { type: 'iban', account_holder: 'Payout Shop GmbH', iban: 'DE89 3704 0044 0532 0130 00' },
    });
    assert.equal(account.status, 200, account.text);
    const requested = await call<{ id: string }>(server, 'POST', '/api/payouts/', {
      token: other.token,
      body: { amount: '20.00' },
    });
    assert.equal(requested.status, 201, requested.text);

    const pending = await run('payout', 'list', '--status', 'pending');
    assert.equal(pending.code, 0, pending.stderr);
    const listed = JSON.parse(pending.stdout) as Json[];
    const mine = listed.find((payout) => payout.id === requested.body.id);
    assert.ok(mine, `${requested.body.id} in ${pending.stdout}`);
    assert.deepEqual(mine && [mine.organization, mine.amount, mine.currency, mine.status], [
      other.slug,
      '20.00',
      'USD',
      'pending',
    ]);
    assert.ok(listed.every((payout) => payout.status === 'pending'));
    // The operator sees the whole account the transfer goes to; the merchant's dashboard never does.
    assert.equal(
      (mine?.destination as Json | undefined)?.iban,
      'DE89 3704 0044 0532 0130 00',
      pending.stdout,
    );

    assert.equal((await run('payout', 'complete', requested.body.id)).code, 0);
    const completed = JSON.parse(
      (await run('payout', 'list', '--status', 'completed', '--org', other.slug)).stdout,
    );
    assert.deepEqual(
      (completed as Json[]).map((payout) => payout.id),
      [requested.body.id],
    );
    assert.deepEqual(JSON.parse((await run('payout', 'list', '--org', merchant.slug)).stdout), []);
    const bad = await run('payout', 'list', '--status', 'paid');
    assert.deepEqual(
      [bad.code, bad.stderr.trim()],
      [1, 'kassa: --status must be one of pending, completed, rejected, got "paid".'],
    );
  });

  test('org set --help names every option (every command has --help: see cli.test.ts)', async () => {
    const help = await run('org', 'set', '--help');
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: kassa org set <slug> /);
    for (const option of [
      '--fee-percent',
      '--reserve-percent',
      '--reserve-days',
      '--min-payment',
      '--max-payment',
      '--tax-rate',
      '--pricing-mode',
    ])
      assert.ok(help.stdout.includes(option), option);
  });
});
