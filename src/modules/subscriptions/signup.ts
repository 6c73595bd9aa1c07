// The customer's signup (decisions.md "Subscriptions"): the public plan (/subscribe/{plan id} reads it),
// the start that opens a signup checkout, and what makes the subscription once the card is saved.
//
// A signup checkout is a hosted checkout of the plan's price with three differences:
// - the card is saved on a provider customer made for the subscription (kassa-customer-{SU id});
// - without a trial, the first period is charged on the hosted page (the card saved by that payment);
//   with a trial nothing is charged: the card is only saved (a setup, kassa-setup-{SU id}-{n}), with
//   3-D Secure where the card asks for it;
// - once that succeeds, and only then, the subscription exists: active with its period 0 paid, or
//   trialing until the trial's end. A signup checkout that expires or is canceled makes nothing, even
//   when its setup succeeds later (a 3-D Secure approval or a SetupIntent finished after the expiry:
//   applySetup).
// The subscription's id is chosen when the checkout starts, so the first payment carries it.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { GoneError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { isPublicId, newPublicId } from '../../lib/ids.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import { callProvider } from '../../provider/operations/perform.ts';
import type { OperationHandler, OperationHandlers } from '../../provider/operations/reconciler.ts';
import { countOperations, recordOperation, settleOperation } from '../../provider/operations/store.ts';
import type { OperationRow } from '../../provider/operations/table.ts';
import type { CardInput, KnownOutcome, ProviderSetupState, SavedCard } from '../../provider/types.ts';
import { presentAction } from '../checkout/hosted.ts';
import { type BillingDetails, parseBillingAndUrls } from '../checkout/input.ts';
import { createCheckoutSession } from '../checkout/service.ts';
import {
  assertStillOpen,
  attemptInFlight,
  checkoutState,
  redirectUrl,
  syncStatusOf,
} from '../checkout/status.ts';
import * as checkouts from '../checkout/store.ts';
import type { CheckoutSessionRow } from '../checkout/table.ts';
import { assertAllowedRedirect, redirectOriginsOf } from '../organizations/redirect-origins.ts';
import { getOrganization } from '../organizations/service.ts';
import type { StartLinkInput } from '../payment-links/schemas.ts';
import type { PaymentRow } from '../payments/table.ts';
import { billingAnchor, periodBounds } from './periods.ts';
import { runRenewals } from './renew.ts';
import type { SubscriptionPlanRow, SubscriptionRow } from './table.ts';

const SETUP_KIND = 'signup_setup';
const ATTEMPT_LOCK_MS = 60_000;

async function availablePlan(ctx: AppContext, planId: string): Promise<SubscriptionPlanRow> {
  const plan = isPublicId('plan', planId)
    ? await ctx.db
        .selectFrom('subscription_plans')
        .selectAll()
        .where('public_id', '=', planId)
        .executeTakeFirst()
    : undefined;
  if (!plan) throw new NotFoundError('Plan not found.');
  if (plan.is_active !== 1) throw new GoneError('This plan is no longer available.');
  const organization = await getOrganization(ctx.db, plan.organization_id);
  if (organization.status !== 'active') throw new GoneError('This plan is no longer available.');
  return plan;
}

/** GET /subscriptions/public/{plan id}/: what the signup page shows. */
export async function previewPlan(ctx: AppContext, planId: string) {
  const plan = await availablePlan(ctx, planId);
  const organization = await getOrganization(ctx.db, plan.organization_id);
  return {
    id: plan.public_id,
    name: plan.name,
    amount: formatAmount(toBigInt(plan.amount)),
    currency: plan.currency,
    interval: plan.interval,
    interval_count: Number(plan.interval_count),
    trial_days: Number(plan.trial_days),
    environment: plan.environment,
    merchant: { name: organization.name, website: organization.website || null },
  };
}

/** POST /subscriptions/public/{plan id}/start/: the signup checkout, with the payment-link start body. */
export async function startSignup(ctx: AppContext, planId: string, input: StartLinkInput) {
  const plan = await availablePlan(ctx, planId);
  if (input.currency !== undefined && input.currency !== plan.currency) {
    throw new ValidationError(`currency: this plan charges in ${plan.currency}, not ${input.currency}.`);
  }
  const organization = await getOrganization(ctx.db, plan.organization_id);
  const { billing, urls } = parseBillingAndUrls(input);
  // The start is anonymous: a return URL must be on one of the organization's redirect origins.
  const origins = redirectOriginsOf(organization);
  for (const [field, url] of [
    ['successUrl', urls.success],
    ['failedUrl', urls.failed],
    ['cancelUrl', urls.cancel],
  ] as const) {
    if (url !== null) assertAllowedRedirect(field, url, origins);
  }
  return ctx.db.transaction().execute((trx) =>
    createCheckoutSession(trx, ctx, {
      organizationId: plan.organization_id,
      environment: plan.environment,
      currency: plan.currency,
      items: [{ productId: null, name: plan.name, unitPrice: toBigInt(plan.amount), quantity: 1 }],
      // The plan's amount is what the customer pays each period, tax included.
      priceMode: 'TTC',
      billing,
      urls,
      simulate: null,
      paymentLinkId: null,
      ttlS: ctx.config.linkCheckoutTtlS,
      subscriptionPublicId: newPublicId('subscription'),
      subscriptionPlanId: plan.id,
    }),
  );
}

async function planOf(db: Executor, session: CheckoutSessionRow): Promise<SubscriptionPlanRow> {
  if (session.subscription_plan_id === null) throw new Error(`checkout ${session.public_id} is not a signup`);
  return db
    .selectFrom('subscription_plans')
    .selectAll()
    .where('id', '=', session.subscription_plan_id)
    .executeTakeFirstOrThrow();
}

/** What the hosted page says of a signup checkout (null for every other checkout). */
export async function signupTerms(ctx: AppContext, session: CheckoutSessionRow) {
  if (session.subscription_plan_id === null) return null;
  const plan = await planOf(ctx.db, session);
  return {
    plan_id: plan.public_id,
    plan_name: plan.name,
    amount: formatAmount(toBigInt(plan.amount)),
    currency: plan.currency,
    interval: plan.interval,
    interval_count: Number(plan.interval_count),
    trial_days: Number(plan.trial_days),
    update_card: session.purpose === 'card_update',
  };
}

/**
 * Whether a checkout only saves a card rather than charging it: a signup whose plan has a trial, or a
 * subscription's update-card page.
 */
export async function savesCardOnly(db: Executor, session: CheckoutSessionRow): Promise<boolean> {
  if (session.subscription_plan_id === null) return false;
  if (session.purpose === 'card_update') return true;
  return Number((await planOf(db, session)).trial_days) > 0;
}

/**
 * The provider's customer of a signup (made once: the same key returns the same customer), recorded on
 * the checkout. Making a customer moves no money, so a lost answer is simply asked again.
 */
export async function signupCustomer(ctx: AppContext, session: CheckoutSessionRow): Promise<string> {
  if (session.provider_customer_id !== null) return session.provider_customer_id;
  const reference = session.subscription_public_id ?? session.public_id;
  const provider = ctx.providers.forEnvironment(session.environment);
  const { customerId } = await provider.createCustomer({
    idempotencyKey: `kassa-customer-${reference}`,
    reference,
    environment: session.environment,
    email: session.billing_email,
    name: `${session.billing_first_name} ${session.billing_last_name}`.trim(),
    metadata: { kassa_subscription_id: reference, kassa_checkout_id: session.public_id },
  });
  await checkouts.updateSession(ctx.db, session.id, { provider_customer_id: customerId });
  return customerId;
}

/**
 * Makes the subscription of a signup whose card is saved (in the caller's transaction), once: without a
 * trial from its paid first payment (period 0 paid by it), with a trial from the setup alone.
 * Returns false when it already exists or the card is unknown.
 */
export async function activateSignup(
  trx: Executor,
  session: CheckoutSessionRow,
  payment: PaymentRow | null,
  card: SavedCard | null,
  providerName: string,
  nowIso: string,
): Promise<boolean> {
  const publicId = session.subscription_public_id;
  if (publicId === null || session.subscription_plan_id === null || card === null) return false;
  const existing = await trx
    .selectFrom('subscriptions')
    .select('id')
    .where('public_id', '=', publicId)
    .executeTakeFirst();
  if (existing) return false;
  const plan = await planOf(trx, session);
  const trialDays = payment === null ? Number(plan.trial_days) : 0;
  const anchor = billingAnchor(new Date(nowIso), trialDays);
  const recurrence = { interval: plan.interval, intervalCount: Number(plan.interval_count) };
  const subscription = await trx
    .insertInto('subscriptions')
    .values({
      public_id: publicId,
      organization_id: session.organization_id,
      environment: session.environment,
      plan_id: plan.id,
      status: payment === null ? 'trialing' : 'active',
      customer_email: session.billing_email,
      customer_name: `${session.billing_first_name} ${session.billing_last_name}`.trim() || null,
      provider: providerName,
      provider_customer_id: card.customerId,
      payment_method_id: card.paymentMethodId,
      card_brand: card.brand,
      card_last4: card.last4,
      card_exp_month: card.expMonth,
      card_exp_year: card.expYear,
      anchor_at: anchor.toISOString(),
      trial_end: payment === null ? anchor.toISOString() : null,
      // With a trial, period 0 is due at its end; without, period 1 (period 0 is this payment).
      next_renewal_at:
        payment === null ? anchor.toISOString() : periodBounds(anchor, recurrence, 1).start.toISOString(),
      test_clock_at: null,
      canceled_at: null,
      cancel_reason: null,
      created_at: nowIso,
      updated_at: nowIso,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  if (payment !== null) {
    const period = periodBounds(anchor, recurrence, 0);
    await trx
      .insertInto('subscription_cycles')
      .values({
        subscription_id: subscription.id,
        organization_id: session.organization_id,
        environment: session.environment,
        period_index: 0,
        period_start: period.start.toISOString(),
        period_end: period.end.toISOString(),
        amount: Number(payment.gross),
        currency: payment.currency,
        status: 'paid',
        attempts: 1,
        first_attempt_at: nowIso,
        next_attempt_at: null,
        payment_id: payment.id,
        created_at: nowIso,
        updated_at: nowIso,
      })
      .execute();
    await trx
      .updateTable('payments')
      .set({ subscription_id: subscription.id })
      .where('id', '=', payment.id)
      .execute();
  }
  await trx
    .updateTable('checkout_sessions')
    .set({ completed_at: nowIso })
    .where('id', '=', session.id)
    .execute();
  return true;
}

/**
 * The hook of payments/transitions.ts: a signup's first payment is paid, so its subscription is made.
 * True when it made one (the payment row then carries the subscription).
 */
export async function onSignupPaymentPaid(
  trx: Executor,
  payment: PaymentRow,
  card: SavedCard | null,
  nowIso: string,
): Promise<boolean> {
  const session = await trx
    .selectFrom('checkout_sessions')
    .selectAll()
    .where('id', '=', payment.checkout_session_id)
    .where('subscription_plan_id', 'is not', null)
    .executeTakeFirst();
  if (!session) return false;
  if (card === null) {
    await flagUnsavedMethod(trx, payment, nowIso);
    return false;
  }
  return activateSignup(trx, session, payment, card, payment.provider, nowIso);
}

/**
 * A signup paid with a method the provider saved no card of (Stripe allows only cards on a signup's
 * PaymentIntent; this is the backstop should one get through): the customer paid and the wallet is
 * credited, but there is nothing to renew, so no subscription is made. Flagged like a provider conflict
 * (the payment's review in the dashboard), for a person to refund it or have the customer sign up again.
 */
async function flagUnsavedMethod(trx: Executor, payment: PaymentRow, nowIso: string) {
  await trx
    .updateTable('payments')
    .set({
      provider_conflict: `This subscription signup was paid (${nowIso}) with a payment method that saved no card, so no subscription was made: refund it at the provider, or have the customer sign up again with a card.`,
    })
    .where('id', '=', payment.id)
    .where('provider_conflict', 'is', null)
    .execute();
}

/**
 * Records what a setup of a trial signup shows: the subscription on success, the waiting challenge
 * otherwise. A setup that succeeds once its checkout is no longer open (expired or canceled; a
 * 3-D Secure approval, a SetupIntent confirmed or its webhook read after the expiry) acts on nothing:
 * a signup checkout that expires creates nothing, and an expired update-card page replaces no card.
 * The card it saved stays on the provider's customer, unused (no subscription names it, so nothing ever
 * charges it); no money moved, so the customer only has to start again.
 */
async function applySetup(
  ctx: AppContext,
  sessionId: number,
  setup: ProviderSetupState | null,
  providerName: string,
) {
  const { after, applied } = await ctx.db
    .transaction()
    .execute((trx) => applySetupIn(trx, sessionId, setup, providerName, ctx.clock()));
  await afterSetup(ctx, after, applied);
  return after;
}

/** applySetup's transaction, in the caller's (kassa operation resolve records it with its audit). */
async function applySetupIn(
  trx: Executor,
  sessionId: number,
  setup: ProviderSetupState | null,
  providerName: string,
  now: Date,
) {
  let applied = false;
  const session = await checkouts.lockSession(trx, sessionId);
  const nowIso = now.toISOString();
  if (setup?.status === 'succeeded' && checkoutState(session, undefined, now) === 'open') {
    applied = true;
    if (session.purpose === 'card_update') await replaceCard(trx, session, setup.savedCard, nowIso);
    else await activateSignup(trx, session, null, setup.savedCard, providerName, nowIso);
  }
  await trx
    .updateTable('checkout_sessions')
    .set({
      signup_setup_id: setup?.setupId ?? session.signup_setup_id,
      attempt_locked_until: null,
      updated_at: nowIso,
    })
    .where('id', '=', sessionId)
    .execute();
  return { after: await checkouts.lockSession(trx, sessionId), applied };
}

/** After applySetup's commit: a new card retries a period being dunned at once (dunning stays on its schedule otherwise). */
async function afterSetup(ctx: AppContext, after: CheckoutSessionRow, applied: boolean) {
  if (applied && after.purpose === 'card_update' && after.completed_at !== null) {
    await retryWithNewCard(ctx, after);
  }
}

/**
 * POST /checkout/{token}/pay/ on a trial signup: saves the card (no charge) under its write-ahead row,
 * with the pay answer's shape (no payment: transaction_id and payment_status are null).
 */
export async function saveTrialCard(
  ctx: AppContext,
  found: CheckoutSessionRow,
  card: CardInput & { brand: string; last4: string },
) {
  const provider = ctx.providers.forEnvironment(found.environment);
  if (found.purpose === 'card_update') {
    const subscription = await ctx.db
      .selectFrom('subscriptions')
      .select('status')
      .where('public_id', '=', found.subscription_public_id ?? '')
      .executeTakeFirst();
    if (!subscription || subscription.status === 'canceled') {
      throw new GoneError('This subscription has been canceled; there is no card to update.');
    }
  }
  const customerId = await signupCustomer(ctx, found);
  const reference = found.subscription_public_id ?? found.public_id;
  const { operation } = await ctx.db.transaction().execute(async (trx) => {
    const now = ctx.clock();
    const session = await checkouts.lockSession(trx, found.id);
    assertStillOpen(checkoutState(session, undefined, now));
    if (attemptInFlight(session, now)) {
      throw new ValidationError('A card is already being saved for this checkout; wait a moment.');
    }
    await checkouts.updateSession(trx, session.id, {
      attempt_locked_until: new Date(now.getTime() + ATTEMPT_LOCK_MS).toISOString(),
    });
    const n = (await countOperations(trx, 'checkout_session', session.id, SETUP_KIND)) + 1;
    const recorded = await recordOperation(
      trx,
      {
        kind: SETUP_KIND,
        idempotencyKey:
          session.purpose === 'card_update'
            ? `kassa-setup-${reference}-${session.public_id}-${n}`
            : `kassa-setup-${reference}-${n}`,
        provider: provider.name,
        environment: session.environment,
        organizationId: session.organization_id,
        subjectType: 'checkout_session',
        subjectId: session.id,
        reference,
        context: { customer_id: customerId },
      },
      now.toISOString(),
      ctx.config.reconcileScheduleMs,
    );
    return { operation: recorded };
  });
  const call = await callProvider(ctx.config, operation, () =>
    provider.setupCard({
      idempotencyKey: operation.idempotency_key,
      reference,
      environment: found.environment,
      customerId,
      card,
      metadata: { kassa_subscription_id: reference, kassa_checkout_id: found.public_id },
    }),
  );
  const outcome = call.answered ? call.value.outcome : { status: 'unknown' as const, reason: call.reason };
  const setup = call.answered ? call.value.setup : null;
  await ctx.db
    .transaction()
    .execute((trx) =>
      settleOperation(trx, operation.id, outcome, setup?.setupId ?? null, ctx.clock().toISOString()),
    );
  const session =
    outcome.status === 'unknown'
      ? await checkouts.lockSession(ctx.db, found.id)
      : await applySetup(ctx, found.id, setup, provider.name);
  const status = syncStatusOf(checkoutState(session, undefined, ctx.clock()));
  const declined = outcome.status === 'failed';
  return {
    status,
    payment_status: null,
    transaction_id: null,
    attempt: declined
      ? {
          status: 'requires_payment_method',
          paymentId: setup?.setupId ?? '',
          attemptedAt: ctx.clock().toISOString(),
          errorMessage: 'Your card could not be saved.',
          paymentMethod: 'card',
          cardBrand: card.brand,
          cardLast4: card.last4,
        }
      : null,
    redirect_url: redirectUrl(session, status),
    outcome: outcome.status,
    next_action: outcome.status === 'requires_action' ? presentAction(outcome.nextAction) : null,
  };
}

/** The 3-D Secure challenge of a trial's setup, while it waits (what GET /checkout/{token}/ shows). */
export async function pendingSetupAction(ctx: AppContext, session: CheckoutSessionRow) {
  if (session.signup_setup_id === null || session.completed_at !== null) return null;
  const setup = await ctx.providers.forEnvironment(session.environment).getSetup(session.signup_setup_id);
  return setup?.status === 'requires_action' && setup.nextAction ? presentAction(setup.nextAction) : null;
}

/**
 * Reads a trial signup's waiting setup back (after its challenge, or on the page's sync) and makes the
 * subscription when it succeeded. Returns the session as it stands after.
 */
export async function syncTrialSignup(
  ctx: AppContext,
  session: CheckoutSessionRow,
): Promise<CheckoutSessionRow> {
  if (session.signup_setup_id === null || session.completed_at !== null) return session;
  const provider = ctx.providers.forEnvironment(session.environment);
  const setup = await provider.getSetup(session.signup_setup_id);
  if (setup?.status !== 'succeeded') return session;
  return applySetup(ctx, session.id, setup, provider.name);
}

/** The trial signup whose setup a simulator challenge belonged to (the challenge route's answer). */
export async function syncSetupById(ctx: AppContext, setupId: string): Promise<void> {
  const session = await ctx.db
    .selectFrom('checkout_sessions')
    .selectAll()
    .where('signup_setup_id', '=', setupId)
    .executeTakeFirst();
  if (session) await syncTrialSignup(ctx, session);
}

/** The setup this operation made, read by its own key (signupSetup's comment); null when there is none. */
function findOperationSetup(ctx: AppContext, operation: OperationRow) {
  const provider = ctx.providers.named(operation.provider);
  const customerId = String((JSON.parse(operation.context) as { customer_id?: string }).customer_id ?? '');
  return provider.findSetup(operation.idempotency_key, customerId, operation.reference);
}

/**
 * The outcome a setup shows, as its call's answer would have: saved, refused, or not final yet (waiting
 * for the customer's 3-D Secure, processing), which the checkout follows from here as after a live answer.
 */
function setupOutcome(setup: ProviderSetupState): KnownOutcome {
  if (setup.status === 'succeeded') return { status: 'succeeded' };
  if (setup.status === 'requires_action' && setup.nextAction) {
    return { status: 'requires_action', nextAction: setup.nextAction };
  }
  if (setup.status === 'requires_action' || setup.status === 'processing') return { status: 'pending' };
  return {
    status: 'failed',
    code: setup.lastError?.code ?? 'setup_failed',
    message: setup.lastError?.message ?? 'The card could not be saved.',
    retryable: false,
  };
}

/**
 * The reconciler's side of a trial's setup whose answer was lost: read back by the operation's own key
 * (never by the subscription's reference, which the signup's setup and every update-card page's share:
 * a save that never happened must not find an older setup's card), never made twice. A setup the
 * provider has is recorded as its answer would have been, waiting for 3-D Secure included (the setup's
 * id kept, so the page shows its challenge and the subscription is made once approved; not "no record").
 */
const signupSetup: OperationHandler = {
  async read(ctx, operation) {
    const setup = await findOperationSetup(ctx, operation);
    if (!setup) return { outcome: null };
    await applySetup(ctx, operation.subject_id, setup, operation.provider);
    return { outcome: setupOutcome(setup), providerObjectId: setup.setupId };
  },
  async neverMade(ctx, operation) {
    await checkouts.updateSession(ctx.db, operation.subject_id, { attempt_locked_until: null });
  },
  /**
   * kassa operation resolve: read once more by the same key and recorded as `read` records it (the
   * subscription made, or the card replaced, while its checkout is open; a setup still waiting for the
   * customer kept for its page), or, with no setup of this key at the provider, as `neverMade` (the
   * checkout's slot freed).
   */
  async resolve(ctx, operation) {
    const setup = await findOperationSetup(ctx, operation);
    let applied = false;
    let after: CheckoutSessionRow | null = null;
    return {
      shows: setup
        ? `setup ${setup.status} (${[setup.setupId, setup.lastError?.code].filter(Boolean).join(': ')})`
        : `no setup of this call on ${operation.reference}`,
      outcome: setup ? setupOutcome(setup) : null,
      providerObjectId: setup?.setupId ?? null,
      async record(trx) {
        if (setup)
          ({ after, applied } = await applySetupIn(
            trx,
            operation.subject_id,
            setup,
            operation.provider,
            ctx.clock(),
          ));
        else await checkouts.updateSession(trx, operation.subject_id, { attempt_locked_until: null });
        const session = after ?? (await checkouts.lockSession(trx, operation.subject_id));
        return {
          organizationId: session.organization_id,
          target: { type: 'checkout', id: session.public_id },
          state: {
            checkout_id: session.public_id,
            subscription_id: session.subscription_public_id,
            purpose: session.purpose,
            completed: session.completed_at !== null,
          },
        };
      },
      afterCommit: async () => {
        if (after) await afterSetup(ctx, after, applied);
      },
    };
  },
};

export const signupOperationHandlers: OperationHandlers = { [SETUP_KIND]: signupSetup };

/**
 * A trial signup with a provider that takes the card in its own form (Stripe): the setup its form
 * confirms (a SetupIntent, the same one on every read: one key per signup), and its client secret.
 * Opening a setup charges nothing; the card is saved when the customer confirms it in the browser.
 */
export async function providerSetupSecret(
  ctx: AppContext,
  session: CheckoutSessionRow,
): Promise<string | null> {
  if (checkoutState(session, undefined, ctx.clock()) !== 'open') return null;
  const provider = ctx.providers.forEnvironment(session.environment);
  const customerId = await signupCustomer(ctx, session);
  const reference = session.subscription_public_id ?? session.public_id;
  const write = await provider.setupCard({
    // One setup per signup; an update-card page makes its own.
    idempotencyKey:
      session.purpose === 'card_update'
        ? `kassa-setup-${reference}-${session.public_id}`
        : `kassa-setup-${reference}`,
    reference,
    environment: session.environment,
    customerId,
    card: null,
    metadata: { kassa_subscription_id: reference, kassa_checkout_id: session.public_id },
  });
  if (write.setup && write.setup.setupId !== session.signup_setup_id) {
    await checkouts.updateSession(ctx.db, session.id, { signup_setup_id: write.setup.setupId });
  }
  return write.clientSecret;
}

/** Replaces a subscription's saved card with the one its update-card page saved (in the caller's transaction). */
async function replaceCard(
  trx: Executor,
  session: CheckoutSessionRow,
  card: SavedCard | null,
  nowIso: string,
) {
  if (card === null || session.subscription_public_id === null) return;
  const updated = await trx
    .updateTable('subscriptions')
    .set({
      provider_customer_id: card.customerId,
      payment_method_id: card.paymentMethodId,
      card_brand: card.brand,
      card_last4: card.last4,
      card_exp_month: card.expMonth,
      card_exp_year: card.expYear,
      updated_at: nowIso,
    })
    .where('public_id', '=', session.subscription_public_id)
    .where('status', '<>', 'canceled')
    .returning('id')
    .executeTakeFirst();
  if (!updated) return;
  // The period being dunned is due again now, on the new card (its tries so far still count).
  await trx
    .updateTable('subscription_cycles')
    .set({ next_attempt_at: nowIso, needs_new_card: 0, updated_at: nowIso })
    .where('subscription_id', '=', updated.id)
    .where('status', '=', 'retrying')
    .where('next_attempt_at', 'is not', null)
    .execute();
  await trx
    .updateTable('checkout_sessions')
    .set({ completed_at: nowIso })
    .where('id', '=', session.id)
    .execute();
}

async function retryWithNewCard(ctx: AppContext, session: CheckoutSessionRow) {
  const subscription = await ctx.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('public_id', '=', session.subscription_public_id ?? '')
    .executeTakeFirst();
  if (subscription) await runRenewals(ctx, subscription);
}

const CARD_UPDATE_TTL_S = 7 * 86_400;

/**
 * POST /subscriptions/{id}/update-card-link/ (and the failed-payment mail): a single-use page, valid
 * 7 days, where the customer saves a new card; it replaces the saved one and retries a past-due period.
 */
/** `inTransaction` (the merchant's audit entry) is written in the transaction that creates the page. */
export async function createUpdateCardLink(
  ctx: AppContext,
  subscriptionId: number,
  inTransaction?: (trx: Executor) => Promise<void>,
) {
  const subscription = await ctx.db
    .selectFrom('subscriptions')
    .selectAll()
    .where('id', '=', subscriptionId)
    .executeTakeFirstOrThrow();
  const plan = await ctx.db
    .selectFrom('subscription_plans')
    .selectAll()
    .where('id', '=', subscription.plan_id)
    .executeTakeFirstOrThrow();
  const billing = await subscriberBilling(ctx.db, subscription);
  const created = await ctx.db.transaction().execute(async (trx) => {
    const session = await createCheckoutSession(trx, ctx, {
      organizationId: subscription.organization_id,
      environment: subscription.environment,
      currency: plan.currency,
      items: [{ productId: null, name: plan.name, unitPrice: toBigInt(plan.amount), quantity: 1 }],
      priceMode: 'TTC',
      billing,
      urls: { success: null, failed: null, cancel: null },
      simulate: null,
      paymentLinkId: null,
      ttlS: CARD_UPDATE_TTL_S,
      subscriptionPublicId: subscription.public_id,
      subscriptionPlanId: plan.id,
      purpose: 'card_update',
      providerCustomerId: subscription.provider_customer_id,
    });
    await inTransaction?.(trx);
    return session;
  });
  return { url: created.checkout_url, expires_at: new Date(created.expires_at * 1000).toISOString() };
}

/**
 * Who a subscription's later checkouts (renewals, update-card pages) are billed to: the details its
 * signup checkout took, with today's email; a subscription made without one (none in practice) falls
 * back to its name and the unknown country ZZ.
 */
export async function subscriberBilling(
  db: Executor,
  subscription: Pick<SubscriptionRow, 'public_id' | 'customer_name' | 'customer_email'>,
): Promise<BillingDetails> {
  const signup = await db
    .selectFrom('checkout_sessions')
    .select([
      'billing_country',
      'billing_postal_code',
      'billing_first_name',
      'billing_last_name',
      'billing_phone',
    ])
    .where('subscription_public_id', '=', subscription.public_id)
    .orderBy('id')
    .executeTakeFirst();
  const [first, ...rest] = (subscription.customer_name ?? '').trim().split(/\s+/);
  return {
    country: signup?.billing_country ?? 'ZZ',
    postalCode: signup?.billing_postal_code ?? null,
    firstName: signup?.billing_first_name ?? (first || subscription.customer_email),
    lastName: signup?.billing_last_name ?? rest.join(' '),
    email: subscription.customer_email,
    phone: signup?.billing_phone ?? null,
  };
}
