// CONTRACT (implemented by the wallet module): credits a paid payment whose deposit succeeded,
// exactly once, inside the caller's transaction: reserve += net_usd × rolling_reserve_percent/100,
// balance += the rest, as ledger entries. Returns false if it was already settled.
import type { Executor } from '../../db/database.ts';
import type { PaymentRow } from '../payments/table.ts';

export async function settlePayment(_trx: Executor, _payment: PaymentRow, _now: string): Promise<boolean> {
  return false; // placeholder until the wallet module lands
}
