// The simulator's database access: its own tables, reached through withTables(), and row locks.
import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../../context.ts';
import type { Database } from '../../db/database.ts';
import type { ProviderAttempt, ProviderPaymentState } from '../types.ts';
import type { SimPaymentsTable, SimulatorTables } from './table.ts';

export function simulatorDb(db: Kysely<Database>) {
  return db.withTables<SimulatorTables>();
}
export type SimDb = ReturnType<typeof simulatorDb>;
export type SimPayment = Selectable<SimPaymentsTable>;

/** What every simulator operation needs. */
export interface SimContext {
  db: SimDb;
  /** Row locks on PostgreSQL; SQLite serialises transactions already. */
  postgres: boolean;
  clock: Clock;
  settleDelayMs: number;
  refundDelayMs: number;
}

export async function lockSimPayment(
  ctx: SimContext,
  trx: SimDb,
  column: 'reference' | 'provider_payment_id',
  value: string,
): Promise<SimPayment | undefined> {
  const query = trx.selectFrom('sim_payments').selectAll().where(column, '=', value);
  return (ctx.postgres ? query.forUpdate() : query).executeTakeFirst();
}

export function attemptsOf(row: SimPayment): ProviderAttempt[] {
  return JSON.parse(row.attempts) as ProviderAttempt[];
}

export function paymentState(row: SimPayment): ProviderPaymentState {
  const refunded = Number(row.refunded_amount);
  return {
    providerPaymentId: row.provider_payment_id,
    outcome: row.outcome,
    depositStatus: row.deposit_status,
    refundState:
      refunded <= 0 ? null : refunded >= Number(row.refund_basis) ? 'FULLY_REFUNDED' : 'PARTIAL_REFUNDED',
    attempts: attemptsOf(row).reverse(),
  };
}
