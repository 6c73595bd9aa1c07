// Resolving a renewal try flagged for review (kassa renewal list / kassa renewal resolve), on both
// databases, with the simulator and sandbox test clocks: the operator's statement is checked against one
// more read of the provider and refused, with nothing changed, when the provider shows otherwise; a try
// the provider shows charged is recorded paid once (payment paid and settled once, the cycle paid); a try
// it shows declined goes on through the dunning; a try it has no charge of is made again at once under
// the next key. Every resolution is audited (actor operator); anything not flagged is refused.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { commands } from '../src/cli/commands.ts';
import { ConflictError } from '../src/http/errors.ts';
import { runRenewals } from '../src/modules/subscriptions/renew.ts';
import { resolveFlaggedRenewal } from '../src/modules/subscriptions/resolve.ts';
import { recordOperation } from '../src/provider/operations/store.ts';
import type { ChargeSavedCardInput } from '../src/provider/types.ts';
import { assertRefused, kassa, refusedArguments } from './helpers/cli.ts';
import { flagAfterLastRead, settlementsOf, simAttempts } from './helpers/provider-checks.ts';
import { useProvider, wrapProvider } from './helpers/providers.ts';
import {
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { subscribeWithSavedCard } from './helpers/subscriptions.ts';

type Json = Record<string, unknown>;

const DAY = 86_400_000;
const GOOD = '4242424242424242';
const INSUFFICIENT = '4000000000009995';

describe(`resolving flagged renewal tries (${DB_KIND})`, () => {
  let server: TestServer;
  let owner: Merchant;
  let plan: string;
  let anchorDay = 0;

  before(async () => {
    server = await startTestServer({ worker: false });
    owner = await createTestMerchant(server, 'Resolve Shop');
    const created = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: owner.token,
      body: { name: 'Sandbox monthly', amount: '9.99', interval: 'month', environment: 'sandbox' },
    });
    assert.equal(created.status, 201, created.text);
    plan = created.body.id;
  });
  after(() => server.close());

  const db = () => server.ctx.db;
  const advance = async (id: string, days: number) => {
    const response = await call(server, 'POST', `/api/subscriptions/${id}/advance-clock/`, {
      token: owner.token,
      body: { days },
    });
    assert.equal(response.status, 200, response.text);
  };
  /** A sandbox subscription on a test clock whose first period falls due at its anchor. */
  const subscribe = (cardNumber: string) => {
    anchorDay += 1;
    return subscribeWithSavedCard(server, {
      organizationId: owner.organizationId,
      planPublicId: plan,
      cardNumber,
      anchorAt: new Date(Date.UTC(2031, 0, anchorDay, 9, 30)).toISOString(),
      testClock: true,
    });
  };
  const cycleOf = (subscriptionId: number) =>
    db()
      .selectFrom('subscription_cycles')
      .selectAll()
      .where('subscription_id', '=', subscriptionId)
      .executeTakeFirstOrThrow();
  const operation = (key: string) =>
    db()
      .selectFrom('provider_operations')
      .selectAll()
      .where('idempotency_key', '=', key)
      .executeTakeFirstOrThrow();
  const paymentOf = async (subscriptionId: number) =>
    db()
      .selectFrom('payments')
      .selectAll()
      .where('subscription_id', '=', subscriptionId)
      .executeTakeFirstOrThrow();
  const subscriptionStatus = async (id: number) =>
    (await db().selectFrom('subscriptions').select('status').where('id', '=', id).executeTakeFirstOrThrow())
      .status;
  const audits = (subscriptionPublicId: string) =>
    db()
      .selectFrom('audit_log')
      .selectAll()
      .where('action', '=', 'subscription.renewal_resolved')
      .where('target_id', '=', subscriptionPublicId)
      .execute();
  /** The renewal's first try is made through `charge` (the simulator's, wrapped), and its answer lost. */
  const firstTryAnswerLost = async (
    subscription: { id: number; publicId: string },
    charge: (input: ChargeSavedCardInput) => Promise<never>,
  ) => {
    const restore = useProvider(
      server.ctx,
      wrapProvider(server.ctx.providers.simulator, { chargeSavedCard: charge }),
    );
    try {
      await advance(subscription.publicId, 1);
    } finally {
      restore();
    }
    const cycle = await cycleOf(subscription.id);
    assert.deepEqual([cycle.status, cycle.attempts, cycle.next_attempt_at], ['processing', 1, null]);
    const key = `kassa-renew-${cycle.id}-1`;
    await flagAfterLastRead(server.ctx, key, 'simulator unreachable');
    return { cycle, key };
  };
  const lost = (error: string) => async (input: ChargeSavedCardInput) => {
    await server.ctx.providers.simulator.chargeSavedCard(input);
    throw new Error(error);
  };
  const refusal = async (promise: Promise<unknown>, pattern: RegExp) => {
    await assert.rejects(promise, (error: Error) => {
      assert.ok(error instanceof ConflictError, String(error));
      assert.match(error.message, pattern);
      return true;
    });
  };
  const unchanged = async (key: string, subscriptionId: number, cycle: { attempts: number }) => {
    assert.equal((await operation(key)).state, 'flagged', 'still flagged');
    const now = await cycleOf(subscriptionId);
    assert.deepEqual([now.status, now.attempts, now.next_attempt_at], ['processing', cycle.attempts, null]);
  };

  test('a try the provider shows charged: not-charged is refused; kassa renewal resolve paid records it once, audited', async () => {
    const subscription = await subscribe(GOOD);
    const { cycle, key } = await firstTryAnswerLost(subscription, lost('socket hang up'));
    const payment = await paymentOf(subscription.id);
    assert.equal(payment.status, 'processing');
    assert.equal((await simAttempts(server.ctx, payment.public_id))[0]?.status, 'succeeded');

    // The operator sees it: in the list, and on the payment's provider review.
    const listed = await kassa(['renewal', 'list', '--org', owner.slug], server.env);
    assert.equal(listed.code, 0, listed.stderr);
    const rows = JSON.parse(listed.stdout) as Json[];
    assert.deepEqual(
      rows.map((row) => [row.operation, row.subscription_id, row.transaction_id, row.why]),
      [[key, subscription.publicId, payment.public_id, 'unknown']],
    );
    assert.match(String(rows[0].reason), /simulator unreachable/);

    await refusal(
      resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'not_charged' }),
      /^simulator shows this try charged \(simpay_\w+\): it was paid\. Nothing changed; resolve it as paid\.$/,
    );
    await unchanged(key, subscription.id, cycle);
    assert.equal((await paymentOf(subscription.id)).status, 'processing');
    assert.deepEqual(await audits(subscription.publicId), [], 'a refusal is no resolution');

    const resolved = await kassa(['renewal', 'resolve', key, 'paid'], server.env);
    assert.equal(resolved.code, 0, resolved.stderr);
    const answer = JSON.parse(resolved.stdout) as Json;
    assert.deepEqual(
      [answer.operation, answer.resolution, answer.transaction_id, answer.payment_status, answer.cycle],
      [
        key,
        'paid',
        payment.public_id,
        'paid',
        { period_index: 0, status: 'paid', attempts: 1, next_attempt_at: null },
      ],
    );
    assert.deepEqual(answer.subscription, { id: subscription.publicId, status: 'active' });
    const settled = await operation(key);
    assert.deepEqual(
      [settled.state, settled.outcome, settled.provider_object_id],
      ['done', 'succeeded', answer.provider_payment_id],
    );
    const paid = await paymentOf(subscription.id);
    assert.deepEqual([paid.status, paid.provider_payment_id], ['paid', answer.provider_payment_id]);
    assert.equal(await settlementsOf(server.ctx, paid.id), 1, 'settled once');
    assert.equal((await simAttempts(server.ctx, payment.public_id)).length, 1, 'charged once');
    const [entry, ...more] = await audits(subscription.publicId);
    assert.equal(more.length, 0);
    assert.deepEqual([entry.actor_type, entry.organization_id], ['operator', owner.organizationId]);
    assert.deepEqual(
      Object.fromEntries(
        Object.entries(JSON.parse(entry.details) as Json).filter(([name]) =>
          ['operation', 'resolution', 'cycle_status'].includes(name),
        ),
      ),
      { operation: key, resolution: 'paid', cycle_status: 'paid' },
    );
    const review = await call<Json>(server, 'GET', `/api/payments/${payment.public_id}/`, {
      token: owner.token,
    });
    assert.equal(review.body.provider_review, null, 'nothing left to review');

    // Resolved once: again is refused, and the list is empty.
    const again = await kassa(['renewal', 'resolve', key, 'paid'], server.env);
    assert.deepEqual(
      [again.code, again.stderr.trim()],
      [
        1,
        `kassa: ${key} is not flagged: it is done (succeeded). Only a flagged renewal try can be resolved.`,
      ],
    );
    assert.equal(await settlementsOf(server.ctx, paid.id), 1);
    assert.equal((await audits(subscription.publicId)).length, 1);
    const empty = await kassa(['renewal', 'list', '--org', owner.slug], server.env);
    assert.deepEqual(JSON.parse(empty.stdout), []);
  });

  test('two operators resolving the same try at once: one resolution, one refusal, the payment settled once', async () => {
    const subscription = await subscribe(GOOD);
    const { key } = await firstTryAnswerLost(subscription, lost('socket hang up'));
    const results = await Promise.allSettled([
      resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'paid' }),
      resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'paid' }),
    ]);
    assert.deepEqual(results.map((result) => result.status).sort(), ['fulfilled', 'rejected']);
    const refused = results.find((result) => result.status === 'rejected');
    assert.match(String(refused?.reason), new RegExp(`${key} is not flagged: it is done \\(succeeded\\)`));
    const payment = await paymentOf(subscription.id);
    assert.equal(payment.status, 'paid');
    assert.equal(await settlementsOf(server.ctx, payment.id), 1);
    assert.equal((await audits(subscription.publicId)).length, 1);
    assert.equal((await cycleOf(subscription.id)).status, 'paid');
  });

  test('a try that never reached the provider: paid is refused; not-charged tries the period again at once, under the next key, charged once', async () => {
    const subscription = await subscribe(GOOD);
    const { cycle, key } = await firstTryAnswerLost(subscription, async () => {
      throw new Error('connect ECONNREFUSED');
    });
    const payment = await paymentOf(subscription.id);
    assert.deepEqual(await simAttempts(server.ctx, payment.public_id), [], 'the simulator has nothing');

    await refusal(
      resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'paid' }),
      /^simulator shows no charge of this try \(no (payment for TX|attempt of this try)[^)]*\)\. Nothing changed\. If its dashboard shows the charge, name it with --provider-payment-id; otherwise resolve it as not-charged\.$/,
    );
    await unchanged(key, subscription.id, cycle);

    const resolved = await resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'not_charged' });
    assert.equal(resolved.cycle.status, 'processing');
    assert.equal(resolved.cycle.attempts, 1);
    assert.ok(resolved.cycle.next_attempt_at, 'due again at once');
    const settled = await operation(key);
    assert.deepEqual([settled.state, settled.outcome_code], ['done', 'never_reached_provider']);
    assert.equal((await audits(subscription.publicId))[0]?.actor_type, 'operator');

    const clocked = await db()
      .selectFrom('subscriptions')
      .selectAll()
      .where('id', '=', subscription.id)
      .executeTakeFirstOrThrow();
    await runRenewals(server.ctx, clocked);
    const after = await cycleOf(subscription.id);
    assert.deepEqual([after.status, after.attempts], ['paid', 2]);
    const attempts = await simAttempts(server.ctx, payment.public_id);
    assert.deepEqual(
      attempts.map((attempt) => [attempt.status, attempt.idempotencyKey]),
      [['succeeded', `kassa-renew-${cycle.id}-2`]],
    );
    assert.equal(await settlementsOf(server.ctx, payment.id), 1);
    assert.equal(await subscriptionStatus(subscription.id), 'active');
  });

  test('a try the provider shows declined: paid is refused; not-charged goes on with the dunning', async () => {
    const subscription = await subscribe(INSUFFICIENT);
    const { cycle, key } = await firstTryAnswerLost(subscription, lost('read ETIMEDOUT'));
    await refusal(
      resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'paid' }),
      /^simulator shows this try declined \(insufficient_funds\): it was not paid\. Nothing changed; resolve it as not-charged to go on with the dunning\.$/,
    );
    await unchanged(key, subscription.id, cycle);
    assert.equal(await subscriptionStatus(subscription.id), 'trialing');

    const resolved = await resolveFlaggedRenewal(server.ctx, { operation: key, resolution: 'not_charged' });
    assert.deepEqual(
      [resolved.provider_shows, resolved.cycle.status, resolved.cycle.attempts],
      ['declined (insufficient_funds)', 'retrying', 1],
    );
    const retrying = await cycleOf(subscription.id);
    assert.equal(
      Date.parse(retrying.next_attempt_at ?? '') - Date.parse(retrying.first_attempt_at ?? ''),
      DAY,
      'the second try a day after the first',
    );
    assert.equal(await subscriptionStatus(subscription.id), 'past_due');
    assert.equal((await operation(key)).outcome_code, 'insufficient_funds');
  });

  test('only a flagged renewal try is resolved: unknown keys, other calls, settled tries and bad arguments are refused', async () => {
    // Calls of other kinds: a payment attempt and a refund.
    const others = [
      ['payment_attempt', 'kassa-pay-TXresolve-1', 'payment', 'TXresolve'],
      ['refund', 'kassa-refund-RFresolve', 'refund', 'RFresolve'],
    ] as const;
    for (const [kind, idempotencyKey, subjectType, reference] of others) {
      await recordOperation(
        db(),
        {
          kind,
          idempotencyKey,
          provider: 'simulator',
          environment: 'sandbox',
          organizationId: owner.organizationId,
          subjectType,
          subjectId: 1,
          reference,
        },
        new Date().toISOString(),
        server.ctx.config.reconcileScheduleMs,
      );
    }
    const subscription = await subscribe(GOOD);
    await advance(subscription.publicId, 1);
    const cycle = await cycleOf(subscription.id);
    assert.equal(cycle.status, 'paid');
    const key = `kassa-renew-${cycle.id}-1`;
    // Independent commands, run side by side: each is its own process.
    await assertRefused(
      ['renewal', 'resolve'],
      [
        [['kassa-renew-0-1', 'paid'], 'kassa: No provider operation kassa-renew-0-1.'],
        [
          ['kassa-refund-RFresolve', 'not-charged'],
          'kassa: kassa-refund-RFresolve is a refund operation, not a renewal try (kassa-renew-{cycle}-{try}): resolve it with kassa operation resolve kassa-refund-RFresolve.',
        ],
        [
          ['kassa-pay-TXresolve-1', 'paid'],
          'kassa: kassa-pay-TXresolve-1 is a payment_attempt operation, not a renewal try (kassa-renew-{cycle}-{try}): resolve it with kassa operation resolve kassa-pay-TXresolve-1.',
        ],
        [
          ['kassa-pay-TXunknown-1', 'paid'],
          'kassa: kassa-pay-TXunknown-1 is not a renewal try (kassa-renew-{cycle}-{try}): resolve it with kassa operation resolve kassa-pay-TXunknown-1.',
        ],
        [
          [key, 'not-charged'],
          `kassa: ${key} is not flagged: it is done (succeeded). Only a flagged renewal try can be resolved.`,
        ],
      ],
      server.env,
    );
    // Bad arguments stop before the database is opened: run in this process, as main.ts runs a command.
    const command = commands['renewal resolve'];
    const positionals = [[], [key], [key, 'refunded'], [key, 'paid', 'now']];
    const { codes, errors } = await refusedArguments(
      command,
      positionals.map((args) => ({ values: {}, positionals: args })),
    );
    assert.deepEqual(codes, [1, 1, 1, 1]);
    assert.deepEqual(
      errors,
      Array(4).fill('kassa: renewal resolve needs <operation> and paid or not-charged (see --help).'),
    );
    assert.match(command.usage, /^<operation> paid\|not-charged \[--provider-payment-id <id>\]$/);
    assert.equal((await operation(key)).state, 'done', 'nothing changed');
  });
});
