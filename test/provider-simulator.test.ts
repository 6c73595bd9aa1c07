// The simulator v2 through the provider contract, as a subscription's renewal would use it: customers,
// cards saved by a setup or by a first charge, off-session charges keyed kassa-renew-{cycle}-{n}, the
// 3-D Secure cards, the card saved but declined off-session, and replays of the same key.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { SimulatorProvider } from '../src/provider/simulator/simulator.ts';
import type { CardInput, NextAction, ProviderOutcome } from '../src/provider/types.ts';
import { DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';

const card = (number: string): CardInput => ({
  number,
  expMonth: 12,
  expYear: 2099,
  cvc: '123',
  holderName: 'Ada Lovelace',
});
const amounts = { environment: 'production' as const, amountMinor: 1500n, currency: 'EUR', metadata: {} };

function challengeOf(outcome: ProviderOutcome): string {
  assert.equal(outcome.status, 'requires_action', JSON.stringify(outcome));
  const action = (outcome as { nextAction: NextAction }).nextAction;
  assert.equal(action.type, 'simulator_challenge');
  return (action as { challengeId: string }).challengeId;
}

describe(`the simulator through contract v2 (${DB_KIND})`, () => {
  let server: TestServer;
  let sim: SimulatorProvider;
  let counter = 0;
  const next = (prefix: string) => `${prefix}${++counter}`;
  before(async () => {
    server = await startTestServer({ worker: false });
    sim = server.ctx.providers.simulator;
  });
  after(() => server.close());

  async function customer() {
    const reference = next('SUtest');
    return (
      await sim.createCustomer({
        idempotencyKey: `kassa-customer-${reference}`,
        reference,
        environment: 'production',
        email: 'ada@example.test',
        name: 'Ada Lovelace',
        metadata: {},
      })
    ).customerId;
  }

  async function saveBySetup(customerId: string, number: string) {
    const reference = next('setup');
    return sim.setupCard({
      idempotencyKey: `kassa-setup-${reference}`,
      reference,
      environment: 'production',
      customerId,
      card: card(number),
      metadata: {},
    });
  }

  function renew(
    customerId: string,
    paymentMethodId: string,
    cycle: string,
    n = 1,
    providerPaymentId: string | null = null,
  ) {
    return sim.chargeSavedCard({
      ...amounts,
      idempotencyKey: `kassa-renew-${cycle}-${n}`,
      payment: { reference: `TX${cycle}`, providerPaymentId },
      customerId,
      paymentMethodId,
    });
  }

  test('the same customer key returns the same customer', async () => {
    const input = {
      idempotencyKey: 'kassa-customer-same',
      reference: 'same',
      environment: 'production' as const,
      email: 'a@b.test',
      name: 'A',
      metadata: {},
    };
    const [a, b] = [await sim.createCustomer(input), await sim.createCustomer(input)];
    assert.equal(a.customerId, b.customerId);
  });

  test('a setup saves a card (brand, last 4, expiry; never the number) and off-session charges succeed', async () => {
    const customerId = await customer();
    const setup = await saveBySetup(customerId, '4242424242424242');
    assert.deepEqual(setup.outcome, { status: 'succeeded' });
    const saved = setup.setup?.savedCard;
    assert.ok(saved);
    assert.deepEqual([saved.brand, saved.last4, saved.expMonth, saved.expYear], ['visa', '4242', 12, 2099]);
    const methods = await server.ctx.db
      .withTables<{ sim_payment_methods: Record<string, unknown> }>()
      .selectFrom('sim_payment_methods')
      .selectAll()
      .where('payment_method_id', '=', saved.paymentMethodId)
      .execute();
    assert.ok(!JSON.stringify(methods).includes('4242424242424242'), 'the number is not kept');
    const charged = await renew(customerId, saved.paymentMethodId, next('cy'));
    assert.deepEqual(charged.outcome, { status: 'succeeded' });
    assert.equal(charged.payment?.outcome, 'PAYMENT_SUCCESS');
    assert.equal(charged.payment?.depositStatus, 'succeeded');
  });

  test('the same renewal key replays its answer: one charge', async () => {
    const customerId = await customer();
    const saved = (await saveBySetup(customerId, '4242424242424242')).setup?.savedCard;
    assert.ok(saved);
    const cycle = next('cy');
    const first = await renew(customerId, saved.paymentMethodId, cycle);
    const replay = await renew(customerId, saved.paymentMethodId, cycle);
    assert.deepEqual(replay.outcome, first.outcome);
    assert.equal(replay.payment?.attempts.length, 1);
  });

  test('4000 0027 6000 3184: 3-D Secure to save it; every off-session charge is declined authentication_required', async () => {
    const customerId = await customer();
    const setup = await saveBySetup(customerId, '4000002760003184');
    const challengeId = challengeOf(setup.outcome);
    assert.equal(setup.setup?.status, 'requires_action');
    assert.deepEqual(await sim.answerChallenge(challengeId, 'approve'), {
      status: 'approved',
      target: 'setup',
      targetId: setup.setup?.setupId,
    });
    const after = await sim.getSetup(setup.setup?.setupId as string);
    assert.equal(after?.status, 'succeeded');
    const saved = after?.savedCard;
    assert.ok(saved);
    const cycle = next('cy');
    const declined = await renew(customerId, saved.paymentMethodId, cycle);
    assert.equal(declined.outcome.status, 'failed');
    assert.deepEqual(
      [(declined.outcome as { code: string }).code, (declined.outcome as { retryable: boolean }).retryable],
      ['authentication_required', false],
    );
    assert.equal(declined.payment?.outcome, 'PROCESSING', 'the payment may still be paid on-session');
  });

  test('4000 0000 0000 3220: 3-D Secure on the first charge only; later off-session charges succeed', async () => {
    const customerId = await customer();
    const reference = next('TXfirst');
    const first = await sim.chargeCard({
      ...amounts,
      idempotencyKey: `kassa-pay-${reference}-1`,
      payment: { reference, providerPaymentId: null },
      card: card('4000000000003220'),
      simulate: null,
      saveCardFor: customerId,
    });
    const challengeId = challengeOf(first.outcome);
    assert.equal(first.payment?.attempts[0].status, 'requires_action');
    assert.equal((await sim.answerChallenge(challengeId, 'approve'))?.status, 'approved');
    const paid = await sim.findPayment(reference);
    assert.equal(paid?.outcome, 'PAYMENT_SUCCESS');
    assert.equal(paid?.attempts[0].status, 'succeeded');
    const saved = paid?.savedCard;
    assert.ok(saved, 'the first charge saved the card');
    assert.equal(saved.customerId, customerId);
    for (const n of [1, 2]) {
      const renewal = await renew(customerId, saved.paymentMethodId, next('cy'), n);
      assert.deepEqual(renewal.outcome, { status: 'succeeded' });
    }
  });

  test('4000 0000 0000 0341: saved, but every off-session charge is declined (a retry may be tried)', async () => {
    const customerId = await customer();
    const saved = (await saveBySetup(customerId, '4000000000000341')).setup?.savedCard;
    assert.ok(saved);
    const cycle = next('cy');
    const first = await renew(customerId, saved.paymentMethodId, cycle, 1);
    assert.deepEqual(first.outcome, {
      status: 'failed',
      code: 'card_declined',
      message: 'Your card was declined.',
      retryable: true,
    });
    // The retry of the same cycle is the next key on the same provider payment; declined again.
    const retry = await renew(
      customerId,
      saved.paymentMethodId,
      cycle,
      2,
      first.payment?.providerPaymentId ?? null,
    );
    assert.equal(retry.outcome.status, 'failed');
    assert.equal(retry.payment?.attempts.length, 2);
  });

  test('a card the bank refuses is not saved; a 3-D Secure setup that fails saves nothing', async () => {
    const customerId = await customer();
    const refused = await saveBySetup(customerId, '4000000000000002');
    assert.deepEqual(refused.outcome, {
      status: 'failed',
      code: 'card_declined',
      message: 'Your card was declined.',
      retryable: false,
    });
    assert.equal(refused.setup?.savedCard, null);
    const failed = await saveBySetup(customerId, '4000002760003184');
    await sim.answerChallenge(challengeOf(failed.outcome), 'fail');
    const after = await sim.getSetup(failed.setup?.setupId as string);
    assert.deepEqual(
      [after?.status, after?.savedCard, after?.lastError?.code],
      ['requires_payment_method', null, 'authentication_failed'],
    );
  });

  test("an off-session charge of a card that is not the customer's is refused without a payment", async () => {
    const owner = await customer();
    const saved = (await saveBySetup(owner, '4242424242424242')).setup?.savedCard;
    assert.ok(saved);
    const stranger = await customer();
    const charge = await renew(stranger, saved.paymentMethodId, next('cy'));
    assert.equal(charge.outcome.status, 'failed');
    assert.equal(charge.payment, null);
  });
});
