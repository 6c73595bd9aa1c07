// kassa doctor: checks the configuration the service would start with, and prints one line per check
// (ok, warn or FAIL) with what is missing: the database (and what in it waits for a person: refunds and
// payments the provider contradicts), the provider of production, and with Stripe the keys, the webhook
// secret and the webhook endpoint, against Stripe's API. Exit 1 when a check fails.
import { type Kysely, sql } from 'kysely';
import type { Config } from '../config.ts';
import { openDatabase } from '../db/connection.ts';
import type { Database } from '../db/database.ts';
import { migrations } from '../db/migrations/index.ts';
import { flaggedOperationCounts } from '../provider/operations/store.ts';
import { providerRefusals, providerWarnings } from '../provider/startup.ts';
import type { Command } from './commands.ts';

type Line = ['ok' | 'warn' | 'FAIL', string];

async function checkDatabase(config: Config): Promise<Line[]> {
  const handle = openDatabase(config.database);
  try {
    const done = await sql<{ name: string }>`select name from kassa_migrations`
      .execute(handle.db)
      .then((result) => new Set(result.rows.map((row) => row.name)))
      .catch(() => new Set<string>());
    const pending = Object.keys(migrations(handle.kind)).filter((name) => !done.has(name));
    if (pending.length > 0) {
      return [
        ['ok', `database (${handle.kind}) answers`],
        [
          'warn',
          `${pending.length} migration(s) to apply (kassa migrate, or at start): ${pending.join(', ')}`,
        ],
      ];
    }
    return [
      ['ok', `database (${handle.kind}) answers`],
      ['ok', 'database is up to date'],
      await flaggedLine(await flaggedOperationCounts(handle.db)),
      ...(await checkConflicts(handle.db)),
    ];
  } catch (error) {
    return [['FAIL', `database: ${error instanceof Error ? error.message : String(error)}`]];
  } finally {
    await handle.close();
  }
}

/** What the provider contradicts and a person must settle: refunds (kassa refund conflicts), payments. */
async function checkConflicts(db: Kysely<Database>): Promise<Line[]> {
  const count = async (table: 'refunds' | 'payments') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('provider_conflict', 'is not', null)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const refunds = await count('refunds');
  const payments = await count('payments');
  const lines: Line[] = [];
  if (refunds > 0) {
    lines.push([
      'warn',
      `${refunds} refund(s) contradicted by the provider, each blocking new refunds of its payment: see "kassa refund conflicts", settle with "kassa refund resolve"`,
    ]);
  }
  if (payments > 0) {
    lines.push([
      'warn',
      `${payments} payment(s) the provider charged after Kassa gave them up (provider_conflict): refund them at the provider or honour the orders`,
    ]);
  }
  return lines;
}

/** The provider calls flagged for review: each waits for a person (docs/operations.md "Flagged provider calls"). */
async function flaggedLine(counts: { kind: string; count: number }[]): Promise<Line> {
  const total = counts.reduce((sum, { count }) => sum + count, 0);
  if (total === 0) return ['ok', 'no provider call is flagged for review'];
  const { RENEWAL_KIND } = await import('../modules/subscriptions/renewal-cycles.ts');
  const renewals = counts.find(({ kind }) => kind === RENEWAL_KIND)?.count ?? 0;
  const kinds = counts.map(({ kind, count }) => `${count} ${kind}`).join(', ');
  return [
    'warn',
    `${total} provider call(s) flagged for review (${kinds}): see each payment's provider review` +
      (total > renewals ? '; kassa operation list, then kassa operation resolve' : '') +
      (renewals > 0 ? '; renewal tries: kassa renewal list, then kassa renewal resolve' : ''),
  ];
}

function keyMode(key: string): 'test' | 'live' | null {
  return /_test_/.test(key) ? 'test' : /_live_/.test(key) ? 'live' : null;
}

async function checkStripe(config: Config): Promise<Line[]> {
  const { secretKey, publishableKey, webhookSecret } = config.stripe;
  const lines: Line[] = [];
  if (secretKey && publishableKey && keyMode(secretKey) !== keyMode(publishableKey)) {
    lines.push([
      'FAIL',
      'KASSA_STRIPE_SECRET_KEY and KASSA_STRIPE_PUBLISHABLE_KEY are of different modes (test / live)',
    ]);
  }
  if (config.env === 'production' && secretKey && keyMode(secretKey) === 'test') {
    lines.push(['warn', 'KASSA_ENV=production with a Stripe test key: no real money moves']);
  }
  if (!webhookSecret)
    lines.push(['FAIL', 'KASSA_STRIPE_WEBHOOK_SECRET is missing (the endpoint signing secret, whsec_…)']);
  if (!secretKey) return lines;
  const { createStripeClient } = await import('../provider/stripe/transport.ts');
  const { HANDLED_EVENTS } = await import('../provider/stripe/webhooks.ts');
  const stripe = await createStripeClient(config.stripe, 10_000);
  try {
    const account = await stripe.accounts.retrieveCurrent();
    lines.push(['ok', `Stripe accepted the secret key (account ${account.id}) at ${config.stripe.apiUrl}`]);
  } catch (error) {
    lines.push([
      'FAIL',
      `Stripe refused the secret key or could not be reached: ${error instanceof Error ? error.message : String(error)}`,
    ]);
    return lines;
  }
  const url = `${config.publicUrl}/api/provider/webhooks/stripe/`;
  try {
    const endpoints = await stripe.webhookEndpoints.list({ limit: 100 });
    const endpoint = endpoints.data.find((candidate) => candidate.url === url);
    if (!endpoint) {
      lines.push([
        'FAIL',
        `no Stripe webhook endpoint for ${url}: add it with the events ${HANDLED_EVENTS.join(', ')}`,
      ]);
    } else {
      const enabled = new Set(endpoint.enabled_events);
      const missing = enabled.has('*') ? [] : HANDLED_EVENTS.filter((type) => !enabled.has(type));
      if (endpoint.status !== 'enabled')
        lines.push(['FAIL', `the Stripe webhook endpoint ${url} is ${endpoint.status}`]);
      if (missing.length > 0)
        lines.push(['FAIL', `the Stripe webhook endpoint lacks the events ${missing.join(', ')}`]);
      else lines.push(['ok', `Stripe sends the events Kassa handles to ${url}`]);
    }
  } catch (error) {
    lines.push([
      'warn',
      `could not list Stripe's webhook endpoints: ${error instanceof Error ? error.message : String(error)}`,
    ]);
  }
  return lines;
}

export async function doctorLines(config: Config): Promise<Line[]> {
  const lines: Line[] = [['ok', `configuration loads (KASSA_ENV=${config.env})`]];
  lines.push(...(await checkDatabase(config)));
  lines.push(['ok', `production's provider: ${config.provider}; the sandbox's: simulator`]);
  for (const refusal of providerRefusals(config)) lines.push(['FAIL', refusal]);
  for (const warning of providerWarnings(config)) lines.push(['warn', warning]);
  if (config.provider === 'stripe') lines.push(...(await checkStripe(config)));
  return lines;
}

export const doctorCommand: Command = {
  summary: 'Check the configuration, the database and the payment provider (Stripe keys, webhook endpoint).',
  usage: '',
  help:
    'Prints one line per check (ok, warn, FAIL) and exits 1 when a check fails. With KASSA_PROVIDER=stripe\n' +
    "it calls Stripe's API with KASSA_STRIPE_SECRET_KEY and looks for the webhook endpoint\n" +
    '{KASSA_PUBLIC_URL}/api/provider/webhooks/stripe/ and the events it must send.',
  options: {},
  async run({ config }) {
    const lines = await doctorLines(config());
    for (const [level, message] of lines) console.log(`${level.padEnd(4)}  ${message}`);
    return lines.some(([level]) => level === 'FAIL') ? 1 : 0;
  },
};
