// A provider that contradicts a refund Kassa already finished and told the merchant about: it completes
// one Kassa recorded failed (the simulator's simulate:refund_late_success, or a refund the reconciler took
// for never made that arrived after all), or fails one Kassa recorded completed (simulate:refund_reversed,
// Stripe's succeeded → failed). Kassa keeps the status, flags the refund (audited, on the payment's
// review), refuses new refunds of the payment while the conflict is open, and an operator settles it with
// `kassa refund resolve`: the provider's outcome booked in the ledger, or Kassa's kept.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { checkInvariants } from '../bench/invariants.ts';
import { settleRefundConflict } from '../src/modules/refunds/conflict-settle.ts';
import { syncRefunds } from '../src/modules/refunds/sync.ts';
import { signSimulatorWebhook } from '../src/provider/simulator/webhook-signature.ts';
import { kassa } from './helpers/cli.ts';
import { reconcile } from './helpers/provider-checks.ts';
// Not a React hook: it swaps the running service's provider (aliased so the hook lint does not mistake it).
import { useProvider as swapProvider, wrapProvider } from './helpers/providers.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { assertLedgerBalanced, eventsOf, payThroughCheckout } from './helpers/wallet-fixtures.ts';

type Json = Record<string, unknown>;
const DELAY_MS = 1000;
/** The reconciler's reads, counted from the call (the default schedule): 1 min, then 5 min. */
const FIRST_READS_MS = [60_000, 300_000];
const UNDER_REVIEW =
  /^A refund of this payment is under review: the provider contradicts what Kassa recorded for (RF\w+)/;

describe(`a provider that contradicts a finished refund (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  let offsetMs = 0;
  before(async () => {
    server = await startTestServer({
      worker: false,
      clock: () => new Date(Date.now() + offsetMs),
      env: { KASSA_SIM_REFUND_DELAY_MS: String(DELAY_MS) },
    });
    merchant = await createTestMerchant(server, 'Contradicted Shop');
    key = await createTestKey(server, merchant, { environment: 'sandbox' });
  });
  after(() => server.close());

  const later = () => {
    offsetMs += DELAY_MS + 1;
  };
  const refund = (paymentId: string, body: Json, apiKey = key) =>
    call<Json>(server, 'POST', `/sandbox/api/transactions/${paymentId}/refund/`, { apiKey, body });
  const refundRow = (publicId: string) =>
    server.ctx.db
      .selectFrom('refunds')
      .selectAll()
      .where('public_id', '=', publicId)
      .executeTakeFirstOrThrow();
  const paymentRow = (publicId: string) =>
    server.ctx.db
      .selectFrom('payments')
      .selectAll()
      .where('public_id', '=', publicId)
      .executeTakeFirstOrThrow();
  const wallet = async (token = merchant.token) => {
    const { entries: _entries, ...buckets } = (
      await call<Json>(server, 'GET', '/api/wallet/?environment=sandbox', { token })
    ).body;
    return buckets;
  };
  /** The simulator's webhook naming refunds (its calls are signed; the body carries no state). */
  const hook = (refundIds: string[]) => {
    const raw = JSON.stringify({ refund_ids: refundIds });
    const signature = signSimulatorWebhook(
      server.ctx.config.secretKey,
      raw,
      Math.floor(server.ctx.clock().getTime() / 1000),
    );
    return call<Json>(server, 'POST', '/api/provider/webhooks/simulator/', {
      body: raw,
      headers: { 'content-type': 'application/json', 'kassa-signature': signature },
    });
  };
  const tell = async (publicId: string) => hook([(await refundRow(publicId)).provider_refund_id as string]);
  const audit = async (action: string, token = merchant.token) =>
    (
      await call<{ results: Json[] }>(server, 'GET', `/api/organization/audit-log/?action=${action}`, {
        token,
      })
    ).body.results;
  const review = async (paymentId: string, token = merchant.token) =>
    (await call<Json>(server, 'GET', `/api/payments/${paymentId}/`, { token })).body
      .provider_review as Json | null;
  const statuses = async (subject: string) =>
    (await eventsOf(server.ctx, subject)).map((event) => event.payload.status);
  const detailOf = (response: { body: unknown }) => String((response.body as { detail?: unknown }).detail);
  const ledgerChecks = async () =>
    (await checkInvariants(server.ctx.db))
      .filter((result) => /refund/.test(result.name) && !/provider and Kassa agree/.test(result.name))
      .flatMap((result) => result.problems);

  /** A sandbox payment of `unitPrice` and a refund of it the simulator fails, then completes. */
  async function failedThenCompleted(
    unitPrice: number,
    amount?: string,
    as = { apiKey: key, token: merchant.token },
  ) {
    const { apiKey, token } = as;
    const payment = await payThroughCheckout(server, apiKey, { unitPrice, sandbox: true });
    const paidWallet = await wallet(token);
    const created = await refund(
      payment.public_id,
      { reason: 'simulate:refund_late_success', ...(amount ? { amount } : {}) },
      apiKey,
    );
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.status, 'processing');
    const id = created.body.id as string;
    later();
    await syncRefunds(server.ctx);
    assert.equal((await refundRow(id)).status, 'failed', 'Kassa records the first answer');
    return { payment, id, amountUsd: created.body.amount_usd as string, paidWallet };
  }

  test('a refund the provider completes after Kassa recorded it failed is flagged, its status kept, and the payment takes no new refund', async () => {
    const { payment, id, paidWallet } = await failedThenCompleted(40);
    assert.deepEqual(await wallet(), paidWallet, 'the hold was released');
    later();
    const told = await tell(id);
    assert.equal(told.status, 200, told.text);
    assert.deepEqual(told.body, { received: true, payments: 0, refunds: 1 });
    const row = await refundRow(id);
    assert.equal(row.status, 'failed', 'the status the merchant was told stays');
    assert.equal(row.provider_conflict_status, 'completed');
    assert.match(
      row.provider_conflict ?? '',
      /^The provider reports this refund completed after Kassa recorded it failed/,
    );
    assert.match(row.provider_conflict ?? '', new RegExp(`kassa refund resolve ${id}`));
    assert.deepEqual(await wallet(), paidWallet, 'nothing is booked until an operator decides');
    const paid = await paymentRow(payment.public_id);
    assert.deepEqual([paid.status, Number(paid.refunded_amount)], ['paid', 0]);
    assert.deepEqual(await statuses(id), ['processing', 'failed'], 'no event: the status did not move');
    const shown = await call<Json>(server, 'GET', `/sandbox/api/refunds/${id}/`, { apiKey: key });
    assert.equal(shown.body.status, 'failed');

    const [entry, ...others] = await audit('refund.provider_conflict');
    assert.equal(others.length, 0);
    assert.equal((entry.actor as Json).type, 'system');
    assert.deepEqual(entry.target, { type: 'refund', id });
    assert.deepEqual(
      [(entry.details as Json).kassa_status, (entry.details as Json).provider_status],
      ['failed', 'completed'],
    );
    const flagged = await review(payment.public_id);
    assert.deepEqual(
      [flagged?.state, flagged?.operation, flagged?.reason],
      ['flagged', `kassa-refund-${id}`, row.provider_conflict],
    );

    // The customer has the money: a second refund would pay them twice.
    const again = await refund(payment.public_id, { reason: 'the first one failed, try again' });
    assert.equal(again.status, 400, again.text);
    assert.equal(detailOf(again).match(UNDER_REVIEW)?.[1], id);
    const partial = await refund(payment.public_id, { reason: 'a part then', amount: '1.00' });
    assert.equal(partial.status, 400, partial.text);

    // The provider saying it again changes nothing and audits nothing more.
    assert.deepEqual((await tell(id)).body, { received: true, payments: 0, refunds: 0 });
    assert.equal((await audit('refund.provider_conflict')).length, 1);
    await assertLedgerBalanced(server.ctx, merchant.organizationId, 'sandbox');
    const doctor = await kassa(['doctor'], server.env);
    assert.match(
      doctor.stdout,
      /^warn {2}1 refund\(s\) contradicted by the provider, each blocking new refunds of its payment: see "kassa refund conflicts"/m,
    );
  });

  test("kassa refund resolve --outcome provider books the provider's completion: the refund completes, the wallet is debited, the payment counts it, and refunds are accepted again", async () => {
    const { payment, id, amountUsd } = await failedThenCompleted(40, '10.00');
    later();
    await tell(id);
    const listed = await kassa(['refund', 'conflicts', '--org', merchant.slug], server.env);
    assert.equal(listed.code, 0, listed.stderr);
    const conflict = (JSON.parse(listed.stdout) as Json[]).find((item) => item.id === id);
    assert.ok(conflict, listed.stdout);
    assert.deepEqual(
      [
        conflict.transaction,
        conflict.status,
        conflict.provider_status,
        conflict.amount,
        conflict.organization,
      ],
      [payment.public_id, 'failed', 'completed', '10.00', merchant.slug],
    );
    const before = await wallet();
    const resolved = await kassa(
      ['refund', 'resolve', id, '--outcome', 'provider', '--note', 'the bank paid it after all'],
      server.env,
    );
    assert.equal(resolved.code, 0, resolved.stderr);
    assert.deepEqual(
      [(JSON.parse(resolved.stdout) as Json).id, (JSON.parse(resolved.stdout) as Json).status],
      [id, 'completed'],
    );
    const row = await refundRow(id);
    assert.deepEqual(
      [row.status, row.provider_conflict, row.provider_conflict_status],
      ['completed', null, null],
    );
    const after = await wallet();
    const cents = (value: unknown) => Math.round(Number(value) * 100);
    assert.equal(
      cents(before.available) - cents(after.available),
      cents(amountUsd),
      'the wallet gives it up',
    );
    assert.equal(after.held, before.held);
    const counted = await paymentRow(payment.public_id);
    assert.deepEqual([counted.status, Number(counted.refunded_amount)], ['paid', 1000]);
    assert.deepEqual(await statuses(id), ['processing', 'failed', 'completed']);
    assert.equal(await review(payment.public_id), null);
    const [entry] = await audit('refund.provider_conflict_resolved');
    assert.equal((entry.actor as Json).type, 'operator');
    assert.deepEqual(
      [
        (entry.details as Json).outcome,
        (entry.details as Json).note,
        (entry.details as Json).provider_status,
      ],
      ['provider', 'the bank paid it after all', 'completed'],
    );
    assert.equal((await kassa(['refund', 'resolve', id, '--outcome', 'kassa'], server.env)).code, 1);

    const rest = await refund(payment.public_id, { reason: 'the rest' });
    assert.equal(rest.status, 200, rest.text);
    assert.equal(rest.body.amount, '30.00', 'what the provider refunded counts against the remainder');
    later();
    await syncRefunds(server.ctx);
    assert.equal((await paymentRow(payment.public_id)).status, 'refunded');
    await assertLedgerBalanced(server.ctx, merchant.organizationId, 'sandbox');
    assert.deepEqual(await ledgerChecks(), []);
  });

  test('a refund the provider fails after Kassa completed it (simulate:refund_reversed) is flagged; booking the provider fails it, the wallet gets the money back and the payment is paid again', async () => {
    const before = await wallet();
    const payment = await payThroughCheckout(server, key, { unitPrice: 30, sandbox: true });
    const paidWallet = await wallet();
    const created = await refund(payment.public_id, { reason: 'simulate:refund_reversed' });
    const id = created.body.id as string;
    later();
    await syncRefunds(server.ctx);
    assert.equal((await refundRow(id)).status, 'completed');
    assert.equal((await paymentRow(payment.public_id)).status, 'refunded');
    assert.equal(
      (await wallet()).available,
      before.available,
      'the refund took back what the payment brought',
    );
    later();
    assert.deepEqual((await tell(id)).body, { received: true, payments: 0, refunds: 1 });
    const row = await refundRow(id);
    assert.equal(row.status, 'completed');
    assert.equal(row.provider_conflict_status, 'failed');
    assert.match(
      row.provider_conflict ?? '',
      /^The provider reports this refund failed after Kassa recorded it completed \(.+\) \(The refund was reversed: the customer's bank returned it\): the customer was not refunded/,
    );
    // Kassa counts the payment refunded; while the provider says otherwise, the merchant learns why.
    const again = await refund(payment.public_id, { reason: 'once more' });
    assert.equal(again.status, 400, again.text);
    assert.match(detailOf(again), UNDER_REVIEW);

    const settled = await settleRefundConflict(server.ctx, id, 'provider');
    assert.deepEqual([settled.status, settled.provider_conflict], ['failed', null]);
    assert.match(settled.error_message ?? '', /failed the refund after it completed; booked by the operator/);
    assert.deepEqual(await wallet(), paidWallet, 'the money is the merchant’s again');
    const repaid = await paymentRow(payment.public_id);
    assert.deepEqual([repaid.status, Number(repaid.refunded_amount)], ['paid', 0]);
    assert.deepEqual(await statuses(id), ['processing', 'completed', 'failed']);
    assert.deepEqual((await statuses(payment.public_id)).slice(-3), ['refund_pending', 'refunded', 'paid']);
    const retry = await refund(payment.public_id, { reason: 'refund the customer for real' });
    assert.equal(retry.status, 200, retry.text);
    later();
    await syncRefunds(server.ctx);
    assert.equal((await paymentRow(payment.public_id)).status, 'refunded');
    await assertLedgerBalanced(server.ctx, merchant.organizationId, 'sandbox');
    assert.deepEqual(await ledgerChecks(), []);
  });

  test("--outcome kassa keeps Kassa's books: the conflict closes, nothing moves, the note is audited", async () => {
    const { payment, id } = await failedThenCompleted(20);
    later();
    await tell(id);
    const before = await wallet();
    const kept = await kassa(
      ['refund', 'resolve', id, '--outcome', 'kassa', '--note', 'clawed back'],
      server.env,
    );
    assert.equal(kept.code, 0, kept.stderr);
    const row = await refundRow(id);
    assert.deepEqual([row.status, row.provider_conflict], ['failed', null]);
    assert.deepEqual(await wallet(), before);
    assert.deepEqual(await statuses(id), ['processing', 'failed']);
    const resolved = (await audit('refund.provider_conflict_resolved')).find(
      (entry) => (entry.target as Json).id === id,
    );
    assert.ok(resolved);
    assert.deepEqual(
      [(resolved.details as Json).outcome, (resolved.details as Json).note],
      ['kassa', 'clawed back'],
    );
    const retry = await refund(payment.public_id, { reason: 'after the review' });
    assert.equal(retry.status, 200, retry.text);
    const bad = await kassa(['refund', 'resolve', id, '--outcome', 'maybe'], server.env);
    assert.deepEqual(
      [bad.code, bad.stderr.trim()],
      [1, 'kassa: --outcome must be one of provider, kassa (see --help).'],
    );
  });

  test('booking a completion the wallet cannot cover is refused and changes nothing; it goes through once the wallet can', async () => {
    const thin = await createTestMerchant(server, 'Thin Wallet Shop');
    const thinKey = await createTestKey(server, thin, { environment: 'sandbox' });
    const { id } = await failedThenCompleted(40, undefined, { apiKey: thinKey, token: thin.token });
    later();
    await tell(id);
    const full = await wallet(thin.token);
    const payout = await call<Json>(server, 'POST', '/api/payouts/', {
      token: thin.token,
      body: { amount: full.balance, environment: 'sandbox' },
    });
    assert.equal(payout.status, 201, payout.text);
    await assert.rejects(settleRefundConflict(server.ctx, id, 'provider'), (error: Error) => {
      assert.match(
        error.message,
        new RegExp(`^The wallet cannot cover ${id}: \\d+\\.\\d\\d USD available of the 38\\.84 USD it takes`),
      );
      return true;
    });
    const row = await refundRow(id);
    assert.deepEqual([row.status, row.provider_conflict_status], ['failed', 'completed'], 'still open');
    const rejected = await kassa(['payout', 'reject', payout.body.id as string], server.env);
    assert.equal(rejected.code, 0, rejected.stderr);
    const booked = await settleRefundConflict(server.ctx, id, 'provider');
    assert.equal(booked.status, 'completed');
    await assertLedgerBalanced(server.ctx, thin.organizationId, 'sandbox');
  });

  /** A sandbox refund whose call never reached the simulator, failed by the reconciler as never made. */
  async function neverMade(unitPrice: number) {
    const payment = await payThroughCheckout(server, key, { unitPrice, sandbox: true });
    const restore = swapProvider(
      server.ctx,
      wrapProvider(server.ctx.providers.simulator, {
        createRefund: async () => {
          throw new Error('connect ECONNREFUSED');
        },
      }),
    );
    const created = await refund(payment.public_id, { reason: 'lost on the way' });
    restore();
    assert.equal(created.body.status, 'pending', created.text);
    for (const step of FIRST_READS_MS) {
      offsetMs += step;
      await reconcile(server.ctx);
    }
    const id = created.body.id as string;
    const row = await refundRow(id);
    assert.deepEqual(
      [row.status, row.provider_refund_id, row.error_message],
      ['failed', null, 'The refund never reached the provider; nothing was refunded.'],
    );
    /** The same call reaching the simulator after all (a client's retry, long after its timeout). */
    const arrive = (reason: string) =>
      server.ctx.providers.simulator.createRefund({
        idempotencyKey: `kassa-refund-${id}`,
        reference: id,
        environment: 'sandbox',
        providerPaymentId: payment.provider_payment_id as string,
        amountMinor: BigInt(row.amount),
        basisAmountMinor: BigInt(row.amount_in_cents),
        currency: row.currency,
        reason,
        metadata: { kassa_refund_id: id },
      });
    return { payment, id, arrive };
  }

  test('a refund taken for never made that reached the provider after all is found by its reference when the webhook names it, and flagged', async () => {
    const { payment, id, arrive } = await neverMade(25);
    const arrived = await arrive('lost on the way');
    later();
    const told = await hook([arrived.providerRefundId]);
    assert.deepEqual(told.body, { received: true, payments: 0, refunds: 1 });
    const row = await refundRow(id);
    assert.deepEqual(
      [row.status, row.provider_conflict_status, row.provider_refund_id],
      ['failed', 'completed', arrived.providerRefundId],
    );
    assert.equal(detailOf(await refund(payment.public_id, { reason: 'again' })).match(UNDER_REVIEW)?.[1], id);
    const booked = await settleRefundConflict(server.ctx, id, 'provider');
    assert.equal(booked.status, 'completed');
    assert.equal((await paymentRow(payment.public_id)).status, 'refunded');
    await assertLedgerBalanced(server.ctx, merchant.organizationId, 'sandbox');
  });

  test('a conflict the provider withdraws (processing, then failed as Kassa said) closes by itself; nothing can be booked while it processes', async () => {
    const { payment, id, arrive } = await neverMade(15);
    const arrived = await arrive('simulate:refund_failed');
    assert.equal(arrived.status, 'processing');
    await hook([arrived.providerRefundId]);
    const open = await refundRow(id);
    assert.deepEqual([open.status, open.provider_conflict_status], ['failed', 'processing']);
    assert.match(
      open.provider_conflict ?? '',
      /processing after Kassa recorded it failed \(.+\): it may still refund the customer/,
    );
    assert.equal((await refund(payment.public_id, { reason: 'again' })).status, 400);
    await assert.rejects(
      settleRefundConflict(server.ctx, id, 'provider'),
      /has not finished refund .+ yet \(processing\)/,
    );
    later();
    assert.deepEqual((await hook([arrived.providerRefundId])).body, {
      received: true,
      payments: 0,
      refunds: 1,
    });
    const closed = await refundRow(id);
    assert.deepEqual(
      [closed.status, closed.provider_conflict, closed.provider_conflict_status],
      ['failed', null, null],
    );
    const cleared = (await audit('refund.provider_conflict_cleared')).find(
      (entry) => (entry.target as Json).id === id,
    );
    assert.ok(cleared);
    assert.equal((cleared.actor as Json).type, 'system');
    assert.equal((await refund(payment.public_id, { reason: 'now for real' })).status, 200);
  });

  test("a creation answer that arrives after the provider's webhook finished the refund is older news: no conflict", async () => {
    const payment = await payThroughCheckout(server, key, { unitPrice: 12, sandbox: true });
    const simulator = server.ctx.providers.simulator;
    const restore = swapProvider(
      server.ctx,
      wrapProvider(simulator, {
        // The provider takes the refund, fails it and says so by webhook before its answer (processing)
        // to the creation call is recorded.
        createRefund: async (input) => {
          const answer = await simulator.createRefund(input);
          later();
          const told = await hook([answer.providerRefundId]);
          assert.deepEqual(told.body, { received: true, payments: 0, refunds: 1 });
          return answer;
        },
      }),
    );
    const created = await refund(payment.public_id, { reason: 'simulate:refund_failed' }).finally(restore);
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.status, 'failed', 'the refund as it stands');
    const id = created.body.id as string;
    const row = await refundRow(id);
    assert.deepEqual([row.status, row.provider_conflict_status], ['failed', null]);
    assert.ok(row.provider_refund_id, 'found by its reference, and its provider id recorded');
    assert.deepEqual(await statuses(id), ['failed']);
    assert.equal((await refund(payment.public_id, { reason: 'again' })).status, 200);
  });
});
