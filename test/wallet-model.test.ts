// Model-based property test: random sequences of payments, refunds, refund outcomes (also against a
// finished refund: a provider conflict), the operator's settlement of a conflict, payouts and reserve
// releases, driven through the services against the real database, checked after every step against a
// small independent model of the rules, and against the ledger's own invariants.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { DomainError } from '../src/http/errors.ts';
import { formatAmount, mulDivFloor, mulDivHalfUp, percentOf } from '../src/lib/money.ts';
import { OPERATOR } from '../src/modules/audit/record.ts';
import { createMerchant } from '../src/modules/organizations/service.ts';
import { createPayout, settlePayout } from '../src/modules/payouts/service.ts';
import { settleRefundConflict } from '../src/modules/refunds/conflict-settle.ts';
import { createRefund } from '../src/modules/refunds/service.ts';
import { recordProviderAnswer } from '../src/modules/refunds/transitions.ts';
import { lesserOf } from '../src/modules/wallet/ledger.ts';
import { releaseDueReserves } from '../src/modules/wallet/reserve.ts';
import { replaceProvider } from '../src/provider/index.ts';
import type { PaymentProvider, ProviderRefundState } from '../src/provider/types.ts';
import { wrapProvider } from './helpers/providers.ts';
import { DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';
import { assertLedgerBalanced, createPaidPayment } from './helpers/wallet-fixtures.ts';

type Answer = ProviderRefundState['status'] | 'throw';

/**
 * The real simulator for payments; refunds answered as the test scripts them, and read back (by the
 * operator's settlement) as the last answer scripted for them.
 */
function scriptedProvider(inner: PaymentProvider) {
  const script = { answer: 'processing' as Answer, states: new Map<string, ProviderRefundState>() };
  const provider = wrapProvider(inner, {
    async createRefund(input) {
      if (script.answer === 'throw') throw new Error('connection reset');
      const status = script.answer;
      return {
        providerRefundId: `scripted_${input.reference}`,
        status,
        errorMessage: status === 'failed' ? 'declined' : null,
      };
    },
    getRefund: async (id) => script.states.get(id) ?? null,
    findRefund: async () => null,
    parseWebhook: () => ({ paymentIds: [], refundIds: [] }),
  });
  return { provider, script };
}

interface ModelPayment {
  id: number;
  gross: bigint;
  netUsd: bigint;
  refunded: bigint;
  status: 'paid' | 'refund_pending' | 'refunded';
  reserve: bigint | null;
}
interface ModelRefund {
  id: number;
  payment: ModelPayment;
  amount: bigint;
  amountUsd: bigint;
  status: string;
  /** The provider's status against a finished refund, while the conflict is open. */
  conflict: 'completed' | 'failed' | null;
  /** The corrections booked for it (the ledger takes each once). */
  booked: Set<'completed' | 'failed'>;
}
interface Model {
  balance: bigint;
  reserve: bigint;
  held: bigint;
  payments: ModelPayment[];
  refunds: ModelRefund[];
  payouts: { id: string; amount: bigint; status: string }[];
}

const action = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('pay' as const),
      gross: fc.integer({ min: 50, max: 50_000 }),
      eur: fc.boolean(),
      settle: fc.boolean(),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('refund' as const),
      pick: fc.nat(),
      /** Aim at the payment of the latest refund: where "in progress" and "already refunded" live. */
      again: fc.boolean(),
      amount: fc.option(fc.nat(), { nil: null }),
      answer: fc.constantFrom<Answer>('processing', 'processing', 'failed', 'completed', 'throw'),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('resolve' as const),
      pick: fc.nat(),
      completed: fc.boolean(),
      twice: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      /** The provider's word about a finished refund: against Kassa's (a conflict), or for it again. */
      kind: fc.constant('contradict' as const),
      pick: fc.nat(),
      against: fc.constantFrom(true, true, true, false),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('settleConflict' as const),
      pick: fc.nat(),
      outcome: fc.constantFrom('provider' as const, 'kassa' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('payout' as const), amount: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('settlePayout' as const),
      pick: fc.nat(),
      complete: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('release' as const) }) },
);
type Action = typeof action extends fc.Arbitrary<infer A> ? A : never;

/** A hold debited: the balance beyond what pending payouts were promised first, then the reserve. */
function debit(model: Model, amount: bigint) {
  const promised = model.payouts.reduce((sum, p) => (p.status === 'pending' ? sum + p.amount : sum), 0n);
  const free = model.balance - promised;
  const fromBalance = lesserOf(amount, free > 0n ? free : 0n);
  model.balance -= fromBalance;
  model.reserve -= amount - fromBalance;
  model.held -= amount;
}

/** What the rules say a refund request should answer: an error prefix, or the amounts. */
function expectRefund(model: Model, payment: ModelPayment, requested: bigint | null) {
  if (model.refunds.some((r) => r.payment === payment && r.conflict !== null))
    return { error: 'A refund of this payment is under review' };
  if (payment.status === 'refunded') return { error: 'Payment has already been refunded' };
  if (
    model.refunds.some((r) => r.payment === payment && (r.status === 'pending' || r.status === 'processing'))
  )
    return { error: 'A refund is already in progress for this payment' };
  const remaining = payment.gross - payment.refunded;
  const amount = requested ?? remaining;
  if (amount > remaining) return { error: 'Refund amount exceeds remaining refundable amount' };
  const available = model.balance + model.reserve - model.held;
  const limit = available <= 0n ? 0n : mulDivFloor(available, payment.gross, payment.netUsd);
  if (limit <= 0n) return { error: 'Insufficient wallet balance to refund any amount' };
  if (amount > limit) return { error: 'Refund amount exceeds wallet-available limit' };
  // The hold: the refund's share of net_usd as a running total (docs/wallet-refunds-payouts.md).
  const shareUpTo = (refunded: bigint) => mulDivHalfUp(refunded, payment.netUsd, payment.gross);
  return { amount, amountUsd: shareUpTo(payment.refunded + amount) - shareUpTo(payment.refunded) };
}

describe(`wallet model (${DB_KIND})`, () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ worker: false });
  });
  after(() => server.close());

  test('any sequence of payments, refunds, outcomes and payouts keeps the ledger and the model in step', async () => {
    const { provider, script } = scriptedProvider(server.ctx.providers.named('simulator'));
    const deps = { ...server.ctx, providers: replaceProvider(server.ctx.providers, provider) };
    let runs = 0;
    // What the runs went through, so a generator that stops reaching a branch fails the test.
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.array(action, { minLength: 8, maxLength: 30 }), async (actions) => {
        runs += 1;
        const { organization } = await createMerchant(server.ctx, {
          organization: `Model ${runs}`,
          email: `model-${runs}-${Date.now()}@acme.test`,
          password: 'correct horse battery',
        });
        const organizationId = organization.id;
        const model: Model = { balance: 0n, reserve: 0n, held: 0n, payments: [], refunds: [], payouts: [] };
        for (const step of actions) {
          await apply(step, model, organizationId);
          const buckets = await assertLedgerBalanced(server.ctx, organizationId);
          assert.deepEqual(
            buckets,
            { balance: model.balance, reserve: model.reserve, held: model.held },
            JSON.stringify(step),
          );
          for (const payment of model.payments) {
            const row = await server.ctx.db
              .selectFrom('payments')
              .selectAll()
              .where('id', '=', payment.id)
              .executeTakeFirstOrThrow();
            assert.equal(row.status, payment.status);
            assert.equal(BigInt(row.refunded_amount), payment.refunded);
          }
        }
        // A payout is paid from the balance it was accepted against, never from the reserve.
        const fromReserve = await server.ctx.db
          .selectFrom('wallet_entries')
          .innerJoin('wallet_movements', 'wallet_movements.id', 'wallet_entries.movement_id')
          .innerJoin('wallets', 'wallets.id', 'wallet_entries.wallet_id')
          .select(['wallet_movements.reference_public_id', 'wallet_entries.amount'])
          .where('wallets.organization_id', '=', organizationId)
          .where('wallet_movements.kind', '=', 'payout_debit')
          .where('wallet_entries.account', '=', 'reserve')
          .where('wallet_entries.amount', '<>', 0)
          .execute();
        assert.deepEqual(fromReserve, []);
      }),
      // A fixed seed by default (KASSA_FUZZ_SEED picks another, as in fuzz.test.ts): the branches the
      // runs must reach are then reached at every run, not in most of them.
      { numRuns: 60, seed: Number(process.env.KASSA_FUZZ_SEED ?? 20_261_127) },
    );
    for (const outcome of [
      'refund processing',
      'refund failed',
      'refund pending',
      'refund completed',
      'resolved completed',
      'resolved failed',
      'conflict completed',
      'conflict failed',
      'settled provider',
      'settled kassa',
      'refused: A refund of this payment is under review',
      'refused: A refund is already in progress for this payment',
      'refused: Refund amount exceeds remaining refundable amount',
      'refused: Insufficient wallet balance to refund any amount',
      'refused: Refund amount exceeds wallet-available limit',
      'payout',
    ]) {
      assert.ok(seen.has(outcome), `no run reached "${outcome}": ${[...seen].join(', ')}`);
    }

    async function apply(step: Action, model: Model, organizationId: number) {
      switch (step.kind) {
        case 'pay': {
          const row = await createPaidPayment(server.ctx, {
            organizationId,
            gross: BigInt(step.gross),
            currency: step.eur ? 'EUR' : 'USD',
            settle: step.settle,
          });
          const netUsd = BigInt(row.net_usd);
          const payment: ModelPayment = {
            id: row.id,
            gross: BigInt(step.gross),
            netUsd,
            refunded: 0n,
            status: 'paid',
            reserve: null,
          };
          if (step.settle) {
            payment.reserve = percentOf(netUsd, 1000n);
            model.reserve += payment.reserve;
            model.balance += netUsd - payment.reserve;
          }
          model.payments.push(payment);
          return;
        }
        case 'refund': {
          if (model.payments.length === 0) return;
          const latest = model.refunds.at(-1);
          const payment =
            step.again && latest ? latest.payment : model.payments[step.pick % model.payments.length];
          const remaining = payment.gross - payment.refunded;
          const requested =
            step.amount === null ? null : (BigInt(step.amount) % (remaining + remaining / 4n + 2n)) + 1n;
          const expected = expectRefund(model, payment, requested);
          script.answer = step.answer;
          let created: Awaited<ReturnType<typeof createRefund>> | null = null;
          try {
            const reason = 'model';
            created = await createRefund(
              deps,
              { organizationId, environment: 'production' },
              { transactionId: String(payment.id), amount: requested, reason, source: 'api' },
            );
          } catch (error) {
            if (!(error instanceof DomainError)) throw error;
            assert.ok(expected.error, `unexpected refusal: ${error.message}`);
            assert.ok(error.message.startsWith(expected.error), `${error.message} ≠ ${expected.error}`);
            seen.add(`refused: ${expected.error}`);
            return;
          }
          assert.equal(expected.error, undefined, `expected ${expected.error}`);
          assert.equal(created.amount, formatAmount(expected.amount ?? 0n));
          assert.equal(created.amount_usd, formatAmount(expected.amountUsd ?? 0n));
          const refund: ModelRefund = {
            id: created.refund_id,
            payment,
            amount: expected.amount ?? 0n,
            amountUsd: expected.amountUsd ?? 0n,
            status: 'pending',
            conflict: null,
            booked: new Set(),
          };
          model.refunds.push(refund);
          model.held += refund.amountUsd;
          payment.status = 'refund_pending';
          if (step.answer === 'failed') fail(model, refund);
          else if (step.answer === 'processing') refund.status = 'processing';
          else if (step.answer === 'completed') complete(model, refund);
          assert.equal(created.status, refund.status);
          seen.add(`refund ${refund.status}`);
          return;
        }
        case 'resolve': {
          const open = model.refunds.filter((r) => r.status === 'pending' || r.status === 'processing');
          const refund = open.length
            ? open[step.pick % open.length]
            : model.refunds[step.pick % Math.max(1, model.refunds.length)];
          if (!refund) return;
          await answer(model, refund, step.completed, step.twice);
          return;
        }
        case 'contradict': {
          if (model.refunds.length === 0) return;
          const refund = model.refunds[step.pick % model.refunds.length];
          // One still in flight is finished first, as the provider's first answer.
          if (refund.status === 'pending' || refund.status === 'processing')
            await answer(model, refund, step.pick % 2 === 0, false);
          await answer(model, refund, (refund.status === 'completed') !== step.against, false);
          return;
        }
        case 'settleConflict': {
          const open = model.refunds.filter((r) => r.conflict !== null);
          if (open.length === 0) return;
          const refund = open[step.pick % open.length];
          const expected = step.outcome === 'provider' ? expectBooking(model, refund) : null;
          try {
            await settleRefundConflict(deps, String(refund.id), step.outcome);
          } catch (error) {
            if (!(error instanceof DomainError)) throw error;
            assert.ok(expected?.error, `unexpected refusal: ${error.message}`);
            assert.ok(error.message.startsWith(expected.error), `${error.message} ≠ ${expected.error}`);
            seen.add(`settle refused: ${expected.error}`);
            return;
          }
          assert.equal(expected?.error, undefined, `expected ${expected?.error}`);
          if (step.outcome === 'provider' && refund.conflict === 'completed') bookCompletion(model, refund);
          else if (step.outcome === 'provider') bookReversal(model, refund);
          refund.conflict = null;
          seen.add(`settled ${step.outcome}`);
          return;
        }
        case 'payout': {
          const payable = model.balance - model.held;
          const amount = (BigInt(step.amount) % ((payable > 0n ? payable : 0n) + 200n)) + 1n;
          try {
            const payout = await createPayout(deps, organizationId, 'production', amount, OPERATOR);
            assert.ok(amount <= payable, 'payout above balance − held accepted');
            model.payouts.push({ id: payout.id, amount, status: 'pending' });
            model.held += amount;
            seen.add('payout');
          } catch (error) {
            if (!(error instanceof DomainError)) throw error;
            assert.ok(amount > payable, `payout refused: ${error.message}`);
          }
          return;
        }
        case 'settlePayout': {
          const pending = model.payouts.filter((p) => p.status === 'pending');
          if (pending.length === 0) return;
          const payout = pending[step.pick % pending.length];
          await settlePayout(deps, payout.id, step.complete ? 'completed' : 'rejected');
          payout.status = step.complete ? 'completed' : 'rejected';
          if (step.complete) debit(model, payout.amount);
          else model.held -= payout.amount;
          return;
        }
        case 'release': {
          await releaseDueReserves({
            db: server.ctx.db,
            clock: () => new Date(Date.now() + 91 * 86_400_000),
          });
          const due = model.payments.reduce((sum, p) => sum + (p.reserve ?? 0n), 0n);
          const released = lesserOf(due, model.reserve);
          for (const payment of model.payments) if (payment.reserve !== null) payment.reserve = 0n;
          model.reserve -= released;
          model.balance += released;
          return;
        }
      }
    }

    function complete(model: Model, refund: ModelRefund) {
      refund.status = 'completed';
      debit(model, refund.amountUsd);
      refund.payment.refunded += refund.amount;
      refund.payment.status = refund.payment.refunded >= refund.payment.gross ? 'refunded' : 'paid';
    }

    /** The provider answers `completed` (or failed) about a refund, as the sync loop or a webhook reads it. */
    async function answer(model: Model, refund: ModelRefund, completed: boolean, twice: boolean) {
      const status = completed ? 'completed' : 'failed';
      const state: ProviderRefundState = {
        providerRefundId: `scripted_${refund.id}`,
        status,
        errorMessage: null,
      };
      for (let i = 0; i < (twice ? 2 : 1); i += 1) await recordProviderAnswer(deps, refund.id, state);
      const row = await server.ctx.db
        .selectFrom('refunds')
        .select(['provider_refund_id', 'provider_conflict_status'])
        .where('id', '=', refund.id)
        .executeTakeFirstOrThrow();
      if (row.provider_refund_id) script.states.set(row.provider_refund_id, state);
      if (refund.status === 'pending' || refund.status === 'processing') {
        if (completed) complete(model, refund);
        else fail(model, refund);
        seen.add(`resolved ${refund.status}`);
      } else {
        // A finished refund never moves: the provider's word against it is a conflict, and its word for
        // it again closes one.
        refund.conflict = (refund.status === 'completed') === completed ? null : status;
        if (refund.conflict) seen.add(`conflict ${refund.conflict}`);
      }
      assert.equal(row.provider_conflict_status, refund.conflict);
    }

    /** Why booking the provider's outcome of a refund's conflict is refused, if it is. */
    function expectBooking(model: Model, refund: ModelRefund): { error?: string } {
      if (refund.conflict === 'failed') return refund.booked.has('failed') ? { error: 'Refund ' } : {};
      const payment = refund.payment;
      if (
        model.refunds.some(
          (r) => r.payment === payment && (r.status === 'pending' || r.status === 'processing'),
        )
      )
        return { error: `Payment ` };
      if (payment.refunded + refund.amount > payment.gross) return { error: `Booking ` };
      if (model.balance + model.reserve - model.held < refund.amountUsd)
        return { error: 'The wallet cannot cover' };
      if (refund.booked.has('completed')) return { error: 'Refund ' };
      return {};
    }

    /** The provider completed a refund Kassa failed: its hold's worth leaves the wallet now. */
    function bookCompletion(model: Model, refund: ModelRefund) {
      const promised = model.payouts.reduce((sum, p) => (p.status === 'pending' ? sum + p.amount : sum), 0n);
      const free = model.balance - promised;
      let fromBalance = lesserOf(refund.amountUsd, free > 0n ? free : 0n);
      let fromReserve = refund.amountUsd - fromBalance;
      if (fromReserve > model.reserve) {
        fromReserve = model.reserve;
        fromBalance = refund.amountUsd - fromReserve;
      }
      model.balance -= fromBalance;
      model.reserve -= fromReserve;
      refund.status = 'completed';
      refund.booked.add('completed');
      refund.payment.refunded += refund.amount;
      if (refund.payment.refunded >= refund.payment.gross) refund.payment.status = 'refunded';
    }

    /** The provider failed a refund Kassa completed: what its debit took comes back to the balance. */
    function bookReversal(model: Model, refund: ModelRefund) {
      model.balance += refund.amountUsd;
      refund.status = 'failed';
      refund.booked.add('failed');
      refund.payment.refunded -= refund.amount;
      if (refund.payment.status === 'refunded') refund.payment.status = 'paid';
    }

    function fail(model: Model, refund: ModelRefund) {
      refund.status = 'failed';
      model.held -= refund.amountUsd;
      refund.payment.status = 'paid';
    }
  });
});
