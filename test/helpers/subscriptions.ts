// Subscriptions made directly in the database, for tests of the merchant's side while no customer can
// sign up through the hosted page yet. The card is the simulator's test card; nothing is charged.
import type { AppContext } from '../../src/context.ts';
import { newPublicId } from '../../src/lib/ids.ts';
import { createMerchant } from '../../src/modules/organizations/service.ts';
import type { CycleStatus, SubscriptionStatus } from '../../src/modules/subscriptions/dunning.ts';
import type { TestServer } from './server.ts';

let counter = 0;

export interface SubscriptionSeed {
  organizationId: number;
  planPublicId: string;
  status: SubscriptionStatus;
  email?: string;
  name?: string | null;
  /** The billing anchor (ISO); default now. */
  anchorAt?: string;
  trialEnd?: string | null;
  createdAt?: string;
}

/** Inserts a subscription of the plan (in the plan's environment); returns its public id and row id. */
export async function insertSubscription(server: TestServer, seed: SubscriptionSeed) {
  counter += 1;
  const db = server.ctx.db;
  const plan = await db
    .selectFrom('subscription_plans')
    .select(['id', 'environment'])
    .where('public_id', '=', seed.planPublicId)
    .executeTakeFirstOrThrow();
  const now = new Date().toISOString();
  const canceled = seed.status === 'canceled';
  const row = await db
    .insertInto('subscriptions')
    .values({
      public_id: newPublicId('subscription'),
      organization_id: seed.organizationId,
      environment: plan.environment,
      plan_id: plan.id,
      status: seed.status,
      customer_email: seed.email ?? `customer${counter}@example.com`,
      customer_name: seed.name === undefined ? `Customer ${counter}` : seed.name,
      provider: 'simulator',
      provider_customer_id: `simcus_${counter}`,
      payment_method_id: `simpm_${counter}`,
      card_brand: 'visa',
      card_last4: '4242',
      card_exp_month: 12,
      card_exp_year: 2030,
      anchor_at: seed.anchorAt ?? now,
      trial_end: seed.trialEnd ?? null,
      next_renewal_at: null,
      canceled_at: canceled ? now : null,
      cancel_reason: canceled ? 'merchant' : null,
      created_at: seed.createdAt ?? now,
      updated_at: now,
    })
    .returning(['id', 'public_id'])
    .executeTakeFirstOrThrow();
  return { id: row.id, publicId: row.public_id };
}

/** Inserts a cycle of a subscription. */
export async function insertCycle(
  server: TestServer,
  subscription: { id: number },
  cycle: {
    organizationId: number;
    periodIndex: number;
    start: string;
    end: string;
    amount: number;
    status: CycleStatus;
    leaseUntil?: string;
  },
) {
  const now = new Date().toISOString();
  await server.ctx.db
    .insertInto('subscription_cycles')
    .values({
      subscription_id: subscription.id,
      organization_id: cycle.organizationId,
      environment: 'production',
      period_index: cycle.periodIndex,
      period_start: cycle.start,
      period_end: cycle.end,
      amount: cycle.amount,
      currency: 'USD',
      status: cycle.status,
      attempts: cycle.status === 'retrying' ? 1 : 0,
      next_attempt_at: cycle.status === 'retrying' || cycle.status === 'processing' ? cycle.end : null,
      leased_by: cycle.leaseUntil ? 'test-worker' : null,
      lease_until: cycle.leaseUntil ?? null,
      created_at: now,
      updated_at: now,
    })
    .execute();
}

/**
 * A subscription whose card is really saved at the simulator (a customer and a setup through the provider
 * contract, as the signup does), with its first period due at `anchorAt`: the state a trial ending then
 * leaves. `testClock`: the subscription starts on a test clock at the anchor (the worker leaves it alone).
 */
export async function subscribeWithSavedCard(
  server: Pick<TestServer, 'ctx'>,
  seed: {
    organizationId: number;
    planPublicId: string;
    cardNumber: string;
    anchorAt: string;
    testClock?: boolean;
    email?: string;
  },
) {
  counter += 1;
  const db = server.ctx.db;
  const plan = await db
    .selectFrom('subscription_plans')
    .select(['id', 'environment'])
    .where('public_id', '=', seed.planPublicId)
    .executeTakeFirstOrThrow();
  const provider = server.ctx.providers.forEnvironment(plan.environment);
  const reference = newPublicId('subscription');
  const email = seed.email ?? `saved${counter}@example.com`;
  const { customerId } = await provider.createCustomer({
    idempotencyKey: `kassa-customer-${reference}`,
    reference,
    environment: plan.environment,
    email,
    name: `Saved ${counter}`,
    metadata: {},
  });
  const setup = await provider.setupCard({
    idempotencyKey: `kassa-setup-${reference}`,
    reference,
    environment: plan.environment,
    customerId,
    card: { number: seed.cardNumber, expMonth: 12, expYear: 2034, cvc: '123', holderName: 'Saved Customer' },
    metadata: {},
  });
  // A 3-D Secure card: the customer approves the simulator's challenge, as on the hosted page.
  let state = setup.setup;
  if (setup.outcome.status === 'requires_action' && setup.outcome.nextAction.type === 'simulator_challenge') {
    await server.ctx.providers.simulator.answerChallenge(setup.outcome.nextAction.challengeId, 'approve');
    state = state ? await provider.getSetup(state.setupId) : null;
  }
  const card = state?.savedCard;
  if (!card)
    throw new Error(`the simulator did not save ${seed.cardNumber}: ${JSON.stringify(setup.outcome)}`);
  const now = new Date().toISOString();
  const row = await db
    .insertInto('subscriptions')
    .values({
      public_id: reference,
      organization_id: seed.organizationId,
      environment: plan.environment,
      plan_id: plan.id,
      status: 'trialing',
      customer_email: email,
      customer_name: `Saved ${counter}`,
      provider: provider.name,
      provider_customer_id: customerId,
      payment_method_id: card.paymentMethodId,
      card_brand: card.brand,
      card_last4: card.last4,
      card_exp_month: card.expMonth,
      card_exp_year: card.expYear,
      anchor_at: seed.anchorAt,
      trial_end: seed.anchorAt,
      next_renewal_at: seed.anchorAt,
      test_clock_at: seed.testClock ? seed.anchorAt : null,
      canceled_at: null,
      cancel_reason: null,
      created_at: now,
      updated_at: now,
    })
    .returning(['id', 'public_id'])
    .executeTakeFirstOrThrow();
  return { id: row.id, publicId: row.public_id, paymentMethodId: card.paymentMethodId };
}

/**
 * A merchant and a monthly production plan made straight through the service's own functions, for the
 * tests that drive the service as child processes (no HTTP server of their own to call).
 */
export async function seedMerchantWithPlan(ctx: AppContext, name: string, amountMinor: number) {
  const { organization } = await createMerchant(ctx, {
    organization: name,
    email: `${name.toLowerCase().replace(/\W+/g, '-')}-${Date.now()}@acme.test`,
    password: 'correct horse battery',
  });
  const planPublicId = newPublicId('plan');
  const now = new Date().toISOString();
  await ctx.db
    .insertInto('subscription_plans')
    .values({
      public_id: planPublicId,
      organization_id: organization.id,
      environment: 'production',
      name: 'Monthly',
      amount: amountMinor,
      currency: 'USD',
      interval: 'month',
      interval_count: 1,
      trial_days: 0,
      is_active: 1,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return { organizationId: organization.id, planPublicId };
}
