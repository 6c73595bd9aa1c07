// Paid payments for wallet, refund and payout tests, made the way the payment flow makes them: a
// checkout session, a real payment at the built-in simulator (so refunds go through it), the payment
// row, and settlement through the wallet's contract. Also the ledger audit every test ends with.
import assert from 'node:assert/strict';
import type { AppContext } from '../../src/context.ts';
import { newPublicId, newToken, sha256Hex } from '../../src/lib/ids.ts';
import { convert, mulDivHalfUp, percentOf, RATE_SCALE } from '../../src/lib/money.ts';
import type { Environment } from '../../src/modules/api-keys/table.ts';
import type { PaymentRow, PaymentStatus } from '../../src/modules/payments/table.ts';
import { auditWallet } from '../../src/modules/wallet/service.ts';
import { settlePayment } from '../../src/modules/wallet/settlement.ts';
import { call } from './server.ts';

export interface PaymentFixture {
  organizationId: number;
  environment?: Environment;
  currency?: 'USD' | 'EUR';
  /** Gross TTC in minor units. */
  gross: bigint;
  taxBp?: bigint;
  feeBp?: bigint;
  status?: PaymentStatus;
  /** Credit the wallet (default true for paid payments). */
  settle?: boolean;
  providerRefundState?: string | null;
}

export async function createPaidPayment(
  ctx: Pick<AppContext, 'db' | 'clock' | 'providers' | 'config'>,
  fixture: PaymentFixture,
): Promise<PaymentRow> {
  const environment = fixture.environment ?? 'production';
  const currency = fixture.currency ?? 'USD';
  const status = fixture.status ?? 'paid';
  const taxBp = fixture.taxBp ?? 0n;
  const gross = fixture.gross;
  const grossHt = mulDivHalfUp(gross, 10_000n, 10_000n + taxBp);
  const fee = percentOf(gross, fixture.feeBp ?? 290n);
  const fxRate = currency === 'USD' ? RATE_SCALE : ctx.config.fxEurUsd;
  const now = ctx.clock().toISOString();
  const publicId = newPublicId('payment');
  // Undecided or failed payments get no provider payment: the payment sync would otherwise decide them.
  const decided = status === 'paid' || status === 'refund_pending' || status === 'refunded';
  const simulator = ctx.providers.forEnvironment(environment);
  const provider = decided
    ? await simulator.chargeCard({
        idempotencyKey: `kassa-pay-${publicId}-1`,
        payment: { reference: publicId, providerPaymentId: null },
        environment,
        amountMinor: gross,
        currency,
        metadata: {},
        card: {
          number: '4242424242424242',
          expMonth: 12,
          expYear: 2040,
          cvc: '123',
          holderName: 'Test Payer',
        },
        simulate: null,
        refundBasisMinor: grossHt,
      })
    : null;
  const checkout = await ctx.db
    .insertInto('checkout_sessions')
    .values({
      public_id: newPublicId('checkout'),
      token_hash: sha256Hex(newToken()),
      organization_id: fixture.organizationId,
      environment,
      payment_link_id: null,
      currency,
      price_mode: 'TTC',
      tax_rate_bp: Number(taxBp),
      items: JSON.stringify([{ product_id: null, name: 'Widget', unit_price: Number(gross), quantity: 1 }]),
      subtotal_ht: Number(grossHt),
      tax_amount: Number(gross - grossHt),
      gross: Number(gross),
      billing_country: 'FR',
      billing_postal_code: null,
      billing_first_name: 'Test',
      billing_last_name: 'Payer',
      billing_email: 'payer@example.test',
      billing_phone: null,
      success_url: null,
      failed_url: null,
      cancel_url: null,
      simulate: null,
      canceled_at: null,
      attempt_locked_until: null,
      expires_at: new Date(Date.parse(now) + 86_400_000).toISOString(),
      created_at: now,
      updated_at: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  const payment = await ctx.db
    .insertInto('payments')
    .values({
      public_id: publicId,
      organization_id: fixture.organizationId,
      environment,
      checkout_session_id: checkout.id,
      payment_link_id: null,
      status,
      currency,
      gross: Number(gross),
      fee: Number(fee),
      net: Number(gross - fee),
      gross_ht: Number(grossHt),
      fee_bp: Number(fixture.feeBp ?? 290n),
      fx_rate: Number(fxRate),
      net_usd: Number(convert(gross - fee, fxRate)),
      payer_email: 'payer@example.test',
      products: JSON.stringify([{ id: 'adhoc', name: 'Widget' }]),
      provider: simulator.name,
      provider_payment_id: provider?.payment?.providerPaymentId ?? null,
      provider_refund_state: fixture.providerRefundState ?? null,
      deposit_status: status === 'paid' ? 'succeeded' : null,
      settled_at: null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  if (fixture.settle ?? status === 'paid') {
    const settled = await ctx.db.transaction().execute((trx) => settlePayment(trx, payment, now));
    assert.equal(settled, true);
  }
  return ctx.db.selectFrom('payments').selectAll().where('id', '=', payment.id).executeTakeFirstOrThrow();
}

/** Asserts the wallet equals its ledger (every movement sums to zero, buckets are their entries' sums). */
export async function assertLedgerBalanced(
  ctx: Pick<AppContext, 'db'>,
  organizationId: number,
  environment: Environment = 'production',
) {
  const audit = await auditWallet(ctx.db, organizationId, environment);
  assert.deepEqual(audit.problems, []);
  return audit.buckets;
}

/** Polls until `check` returns a value (not undefined), or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** The events of a subject, oldest first, with their parsed payloads. */
export async function eventsOf(ctx: Pick<AppContext, 'db'>, subject: string) {
  const rows = await ctx.db
    .selectFrom('events')
    .selectAll()
    .where('subject', '=', subject)
    .orderBy('id')
    .execute();
  return rows.map((row) => ({ type: row.type, payload: JSON.parse(row.payload) as Record<string, unknown> }));
}

/**
 * A real payment through the HTTP flow: checkout create (API key), the hosted page's pay step with a
 * succeeding card, then wait until the payment is paid and the wallet credited.
 */
export async function payThroughCheckout(
  server: { url: string; ctx: Pick<AppContext, 'db'> },
  apiKey: string,
  options: { unitPrice: number; currency?: 'USD' | 'EUR'; sandbox?: boolean },
): Promise<PaymentRow> {
  const base = options.sandbox ? '/sandbox/api' : '/api';
  const created = await call<{ token: string }>(server, 'POST', `${base}/checkout/create/`, {
    apiKey,
    body: {
      billing_country: 'FR',
      billing_first_name: 'Ada',
      billing_last_name: 'Lovelace',
      billing_email: 'ada@example.test',
      currency: options.currency ?? 'USD',
      products: [{ name: 'Widget', unit_price: options.unitPrice, quantity: 1 }],
    },
  });
  assert.equal(created.status, 201, created.text);
  const paid = await call<{ transaction_id: string }>(
    server,
    'POST',
    `/api/checkout/${created.body.token}/pay/`,
    {
      body: {
        card_number: '4242424242424242',
        exp_month: 12,
        exp_year: 2040,
        cvc: '123',
        cardholder_name: 'Ada Lovelace',
      },
    },
  );
  assert.equal(paid.status, 200, paid.text);
  return eventually(async () => {
    const payment = await server.ctx.db
      .selectFrom('payments')
      .selectAll()
      .where('public_id', '=', paid.body.transaction_id)
      .executeTakeFirst();
    return payment?.status === 'paid' && payment.settled_at !== null ? payment : undefined;
  });
}
