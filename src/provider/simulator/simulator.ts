// The built-in provider (KASSA_PROVIDER=simulator, and always the sandbox's): a card processor simulated
// in the database, so its state survives restarts and is the same for every process. Time comes from the
// service clock. Payments and card attempts: payments.ts (test cards: script.ts); 3-D Secure:
// challenges.ts; customers, setups and saved cards: customers.ts; refunds: refunds.ts.
import type { Kysely } from 'kysely';
import type { Clock } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import type { Database } from '../../db/database.ts';
import type {
  ChargeCardInput,
  ChargeSavedCardInput,
  CreateCustomerInput,
  CreateRefundInput,
  OpenPaymentInput,
  PaymentProvider,
  ProviderNotice,
  SetupCardInput,
} from '../types.ts';
import { answerChallenge, type ChallengeAnswer } from './challenges.ts';
import { createSimCustomer, readSimSetup, setupSimCard } from './customers.ts';
import {
  cancelSimPayment,
  chargeSimCard,
  chargeSimSavedCard,
  openSimPayment,
  readSimPayment,
} from './payments.ts';
import { createSimRefund, findSimRefund, readSimRefund } from './refunds.ts';
import { type SimContext, simulatorDb } from './store.ts';

export interface SimulatorOptions {
  db: Kysely<Database>;
  clock: Clock;
  settleDelayMs: number;
  refundDelayMs: number;
  fault?: 'timeout_after_success' | null;
}

export class SimulatorProvider implements PaymentProvider {
  readonly name = 'simulator';
  readonly cardForm = true;
  private readonly sim: SimContext;

  constructor(options: SimulatorOptions) {
    this.sim = {
      db: simulatorDb(options.db),
      postgres: isPostgres(options.db),
      clock: options.clock,
      settleDelayMs: options.settleDelayMs,
      refundDelayMs: options.refundDelayMs,
      fault: options.fault ?? null,
    };
  }

  openPayment(input: OpenPaymentInput) {
    return openSimPayment(this.sim, input);
  }

  chargeCard(input: ChargeCardInput) {
    return chargeSimCard(this.sim, input);
  }

  chargeSavedCard(input: ChargeSavedCardInput) {
    return chargeSimSavedCard(this.sim, input);
  }

  getPayment(providerPaymentId: string) {
    return readSimPayment(this.sim, 'provider_payment_id', providerPaymentId);
  }

  findPayment(reference: string) {
    return readSimPayment(this.sim, 'reference', reference);
  }

  cancelPayment(providerPaymentId: string) {
    return cancelSimPayment(this.sim, providerPaymentId);
  }

  async clientSecretOf(): Promise<null> {
    return null;
  }

  createCustomer(input: CreateCustomerInput) {
    return createSimCustomer(this.sim, input);
  }

  setupCard(input: SetupCardInput) {
    return setupSimCard(this.sim, input);
  }

  getSetup(setupId: string) {
    return readSimSetup(this.sim, 'setup_id', setupId);
  }

  findSetup(idempotencyKey: string) {
    return readSimSetup(this.sim, 'idempotency_key', idempotencyKey);
  }

  createRefund(input: CreateRefundInput) {
    return createSimRefund(this.sim, input);
  }

  getRefund(providerRefundId: string) {
    return readSimRefund(this.sim, providerRefundId);
  }

  findRefund(reference: string) {
    return findSimRefund(this.sim, reference);
  }

  /** The customer's answer on the simulator's 3-D Secure step (not part of the contract: a bank's page). */
  answerChallenge(challengeId: string, answer: ChallengeAnswer) {
    return answerChallenge(this.sim, challengeId, answer);
  }

  /**
   * The simulator's webhook body names what changed: {payment_id?, payment_ids?, refund_id?, refund_ids?}.
   * It carries no state: the receiver re-reads each id, so a forged call can only cause a harmless re-read.
   */
  parseWebhook(rawBody: string): ProviderNotice {
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
