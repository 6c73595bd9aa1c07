// 3-D Secure on the hosted checkout with the simulator: the attempt waits on the challenge the page shows;
// approving pays, failing declines "authentication failed" and the customer may try again; a reload shows
// the waiting challenge; a new attempt abandons it. Every change is one event; one settlement.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GENERIC_DECLINE } from '../src/modules/checkout/card-testing.ts';
import { attemptsOf, CARDS, createCheckout, eventsOf, type Json, pay } from './helpers/checkout.ts';
import { eventStatuses, settlementsOf } from './helpers/provider-checks.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { assertLedgerBalanced } from './helpers/wallet-fixtures.ts';

const THREE_DS = '4000 0027 6000 3184';

describe(`3-D Secure on the hosted checkout (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  let key: string;
  before(async () => {
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server, '3DS Shop');
    key = await createTestKey(server, merchant);
  });
  after(() => server.close());

  async function challenged() {
    const checkout = await createCheckout(server, key, { successUrl: 'https://shop.test/ok' });
    const attempt = await pay(server, checkout.token, THREE_DS);
    assert.equal(attempt.status, 200, attempt.text);
    return { checkout, attempt: attempt.body };
  }

  /** The precise reasons the merchant sees on the payment's attempts, newest first. */
  async function merchantReasons(transactionId: string): Promise<unknown[]> {
    const view = await call<Json>(server, 'GET', `/api/transactions/${transactionId}/`, { apiKey: key });
    assert.equal(view.status, 200, view.text);
    return (view.body.depositAttempts as Json[]).map((attempt) => attempt.errorMessage);
  }

  function answer(url: string, value: 'approve' | 'fail') {
    return call<Json>(server, 'POST', url, { body: { answer: value } });
  }

  test('the attempt waits on the challenge; approving it pays the payment once', async () => {
    const { checkout, attempt } = await challenged();
    assert.deepEqual(
      [attempt.status, attempt.payment_status, attempt.outcome],
      ['CHECKOUT_PENDING', 'processing', 'requires_action'],
    );
    assert.equal((attempt.attempt as Json).status, 'requires_action');
    const action = attempt.next_action as Json;
    assert.equal(action.type, 'simulator_challenge');
    assert.match(action.challenge_id as string, /^simchl_[0-9A-Za-z]{27}$/);
    assert.equal(action.url, `/api/provider/simulator/challenges/${action.challenge_id}/`);
    const approved = await answer(action.url as string, 'approve');
    assert.equal(approved.status, 200, approved.text);
    assert.deepEqual(approved.body, { status: 'approved', payment_status: 'paid' });
    const id = attempt.transaction_id as string;
    const page = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.deepEqual([page.body.status, page.body.next_action], ['paid', null]);
    const events = await eventsOf(server, checkout.order_id);
    assert.deepEqual(
      events.map((event) => [event.status, attemptsOf(event).map((a) => a.status)]),
      [
        ['processing', []],
        ['processing', ['requires_action']],
        ['paid', ['succeeded']],
      ],
    );
    const row = await server.ctx.db
      .selectFrom('payments')
      .selectAll()
      .where('public_id', '=', id)
      .executeTakeFirstOrThrow();
    assert.equal(await settlementsOf(server.ctx, row.id), 1);
    // Answering again changes nothing and returns the first answer.
    assert.deepEqual((await answer(action.url as string, 'fail')).body, {
      status: 'approved',
      payment_status: 'paid',
    });
    assert.deepEqual(await eventStatuses(server.ctx, id), ['processing', 'processing', 'paid']);
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });

  test('failing the challenge declines the attempt "authentication failed"; another card pays', async () => {
    const { checkout, attempt } = await challenged();
    const action = attempt.next_action as Json;
    const failed = await answer(action.url as string, 'fail');
    assert.deepEqual(failed.body, { status: 'failed', payment_status: 'processing' });
    const page = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.equal(page.body.status, 'open');
    assert.equal(page.body.next_action, null);
    const [declined] = page.body.attempts as Json[];
    // The customer is told what any decline tells them (card testing); the merchant keeps the reason.
    assert.deepEqual(
      [declined.status, declined.errorMessage, declined.cardLast4],
      ['requires_payment_method', GENERIC_DECLINE, '3184'],
    );
    assert.deepEqual(await merchantReasons(attempt.transaction_id as string), [
      'The 3-D Secure authentication failed.',
    ]);
    const paid = await pay(server, checkout.token, CARDS.success);
    assert.equal(paid.body.payment_status, 'paid');
    assert.deepEqual((paid.body.attempt as Json).status, 'succeeded');
  });

  test('a reload shows the waiting challenge; a new attempt abandons it', async () => {
    const { checkout, attempt } = await challenged();
    const page = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.deepEqual(page.body.next_action, attempt.next_action);
    const again = await pay(server, checkout.token, CARDS.declined);
    assert.equal(again.body.outcome, 'failed');
    const after = await call<Json>(server, 'GET', `/api/checkout/${checkout.token}/`);
    assert.equal(after.body.next_action, null);
    const [latest, abandoned] = after.body.attempts as Json[];
    assert.equal(latest.errorMessage, GENERIC_DECLINE);
    assert.deepEqual(
      [abandoned.status, abandoned.errorMessage],
      ['requires_payment_method', GENERIC_DECLINE],
    );
    assert.deepEqual(await merchantReasons(attempt.transaction_id as string), [
      'Your card was declined.',
      'The 3-D Secure authentication was not completed.',
    ]);
    const late = await answer((attempt.next_action as Json).url as string, 'approve');
    assert.deepEqual(late.body, { status: 'abandoned', payment_status: 'processing' });
  });

  test('the challenge id is the capability: an unknown one is a 404', async () => {
    const response = await answer('/api/provider/simulator/challenges/simchl_nothing/', 'approve');
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, { detail: 'Challenge not found.' });
    const bad = await call<Json>(server, 'POST', '/api/provider/simulator/challenges/simchl_x/', {
      body: { answer: 'maybe' },
    });
    assert.equal(bad.status, 400);
  });
});
