// The built-in provider (KASSA_PROVIDER=simulator): a card processor simulated in the database, so its
// state survives restarts and is the same for every process. Time comes from the service clock.
// Payments: the test-card table and sandbox scripts (script.ts); a pending deposit settles after
// KASSA_SIM_SETTLE_DELAY_MS; CHECKOUT_PENDING resolves to success on the third read. Refunds: refunds.ts.
import type { Kysely } from 'kysely';
import type { Clock } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import type { Database } from '../../db/database.ts';
import { randomBase62 } from '../../lib/ids.ts';
import type {
  CreatePaymentInput,
  CreateRefundInput,
  PaymentProvider,
  ProviderAttempt,
  ProviderPaymentState,
  ProviderRefundState,
} from '../types.ts';
import { createSimRefund, readSimRefund } from './refunds.ts';
import { answerAttempt, PENDING_SYNCS_TO_RESOLVE } from './script.ts';
import {
  attemptsOf,
  lockSimPayment,
  paymentState,
  type SimContext,
  type SimPayment,
  simulatorDb,
} from './store.ts';

export interface SimulatorOptions {
  db: Kysely<Database>;
  clock: Clock;
  settleDelayMs: number;
  refundDelayMs: number;
}

/** Once the bank says yes (or the deposit lands), the attempts waiting on it succeed. */
function settleAttempts(attempts: ProviderAttempt[]): string {
  return JSON.stringify(
    attempts.map((attempt) => (attempt.status === 'pending' ? { ...attempt, status: 'succeeded' } : attempt)),
  );
}

export class SimulatorProvider implements PaymentProvider {
  readonly name = 'simulator';
  private readonly sim: SimContext;

  constructor(options: SimulatorOptions) {
    this.sim = {
      db: simulatorDb(options.db),
      postgres: isPostgres(options.db),
      clock: options.clock,
      settleDelayMs: options.settleDelayMs,
      refundDelayMs: options.refundDelayMs,
    };
  }

  async createPayment(input: CreatePaymentInput): Promise<ProviderPaymentState> {
    const sim = this.sim;
    const now = sim.clock();
    const nowIso = now.toISOString();
    return sim.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('sim_payments')
        .values({
          provider_payment_id: `simpay_${randomBase62(24)}`,
          reference: input.reference,
          environment: input.environment,
          amount: Number(input.amountMinor),
          refund_basis: Number(input.refundBasisMinor ?? input.amountMinor),
          currency: input.currency,
          simulate: input.environment === 'sandbox' ? input.simulate : null,
          outcome: 'PROCESSING',
          deposit_status: null,
          deposit_settles_at: null,
          attempts: '[]',
          created_at: nowIso,
          updated_at: nowIso,
        })
        .onConflict((conflict) => conflict.column('reference').doNothing())
        .execute();
      const row = await lockSimPayment(sim, trx, 'reference', input.reference);
      if (!row) throw new Error('simulator: payment vanished');
      if (input.providerPaymentId !== null && input.providerPaymentId !== row.provider_payment_id) {
        throw new Error('simulator: provider payment id does not match the reference');
      }
      // A payment that is decided (or waiting on the bank) takes no further attempts.
      if (row.outcome !== 'PROCESSING') return paymentState(row);
      const answer = answerAttempt(input.card, row.simulate, now);
      const attempts = attemptsOf(row);
      attempts.push({
        attemptId: `simatt_${randomBase62(20)}`,
        status: answer.attemptStatus,
        paymentId: row.provider_payment_id,
        attemptedAt: nowIso,
        errorMessage: answer.errorMessage,
        paymentMethod: 'card',
      });
      const settlesAt = new Date(now.getTime() + sim.settleDelayMs).toISOString();
      const updated = await trx
        .updateTable('sim_payments')
        .set({
          outcome: answer.outcome,
          deposit_status: answer.depositStatus,
          deposit_settles_at: answer.depositStatus === 'pending' ? settlesAt : null,
          attempts: JSON.stringify(attempts),
          updated_at: nowIso,
        })
        .where('id', '=', row.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return paymentState(updated);
    });
  }

  async getPayment(providerPaymentId: string): Promise<ProviderPaymentState | null> {
    const sim = this.sim;
    const now = sim.clock();
    return sim.db.transaction().execute(async (trx) => {
      const row = await lockSimPayment(sim, trx, 'provider_payment_id', providerPaymentId);
      if (!row) return null;
      let changes: Partial<SimPayment> | null = null;
      if (row.outcome === 'CHECKOUT_PENDING') {
        const reads = Number(row.pending_syncs) + 1;
        changes =
          reads >= PENDING_SYNCS_TO_RESOLVE
            ? {
                pending_syncs: reads,
                outcome: 'PAYMENT_SUCCESS',
                deposit_status: 'succeeded',
                attempts: settleAttempts(attemptsOf(row)),
              }
            : { pending_syncs: reads };
      } else if (
        row.outcome === 'PAYMENT_SUCCESS' &&
        row.deposit_status === 'pending' &&
        row.deposit_settles_at !== null &&
        now.getTime() >= Date.parse(row.deposit_settles_at)
      ) {
        changes = { deposit_status: 'succeeded', attempts: settleAttempts(attemptsOf(row)) };
      }
      if (changes === null) return paymentState(row);
      const updated = await trx
        .updateTable('sim_payments')
        .set({ ...changes, updated_at: now.toISOString() })
        .where('id', '=', row.id)
        .returningAll()
        .executeTakeFirstOrThrow();
      return paymentState(updated);
    });
  }

  async findPayment(reference: string): Promise<ProviderPaymentState | null> {
    const row = await this.sim.db
      .selectFrom('sim_payments')
      .select('provider_payment_id')
      .where('reference', '=', reference)
      .executeTakeFirst();
    return row ? this.getPayment(row.provider_payment_id) : null;
  }

  createRefund(input: CreateRefundInput): Promise<ProviderRefundState> {
    return createSimRefund(this.sim, input);
  }

  getRefund(providerRefundId: string): Promise<ProviderRefundState | null> {
    return readSimRefund(this.sim, providerRefundId);
  }

  /**
   * The simulator's webhook body names what changed: {payment_id?, payment_ids?, refund_id?, refund_ids?}.
   * It carries no state: the receiver re-reads each id, so a forged call can only cause a harmless re-read.
   */
  parseWebhook(rawBody: string): { paymentIds: string[]; refundIds: string[] } {
    const body: unknown = JSON.parse(rawBody);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('not an object');
    const record = body as Record<string, unknown>;
    const ids = (one: string, many: string): string[] => {
      const list = [record[one], ...(Array.isArray(record[many]) ? record[many] : [])];
      return [...new Set(list.filter((id): id is string => typeof id === 'string' && id.length <= 100))];
    };
    const paymentIds = ids('payment_id', 'payment_ids');
    const refundIds = ids('refund_id', 'refund_ids');
    if (paymentIds.length + refundIds.length === 0) throw new Error('names no payment or refund');
    return { paymentIds, refundIds };
  }
}
