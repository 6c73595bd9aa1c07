// CONTRACT (called by the payments module): credits a paid payment whose deposit succeeded, exactly
// once, inside the caller's transaction: reserve += net_usd × rolling_reserve_percent/100 (half-up),
// balance += the rest, as one ledger movement. Also stamps payments.settled_at and schedules the
// reserve part's release after rolling_reserve_days. Returns false if it was already settled.
import type { Executor } from '../../db/database.ts';
import { toBigInt } from '../../lib/money.ts';
import type { PaymentRow } from '../payments/table.ts';
import { settlementSplit } from './arithmetic.ts';
import { lockWalletWithReserveTerms, postMovement } from './ledger.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Credits a paid payment's net to its wallet once (the movement is unique per payment) and stamps its
 * settled_at. `stamped`: the caller already set settled_at in its own update of the row, under the same
 * transaction's lock (applyProviderState), so it is not stamped again.
 */
export async function settlePayment(
  trx: Executor,
  payment: PaymentRow,
  now: string,
  stamped = false,
): Promise<boolean> {
  const { wallet, terms } = await lockWalletWithReserveTerms(
    trx,
    payment.organization_id,
    payment.environment,
    now,
  );
  const net = toBigInt(payment.net_usd);
  const { reserve, balance } = settlementSplit(net, toBigInt(terms.reserveBp));
  const movementId = await postMovement(trx, wallet, {
    kind: 'settlement',
    referenceId: payment.id,
    referencePublicId: payment.public_id,
    amount: net,
    entries: { settlements: -net, reserve, balance },
    now,
  });
  // settled_at is stamped even when the movement was posted before: a settled payment always carries it.
  if (!stamped) {
    await trx
      .updateTable('payments')
      .set({ settled_at: now })
      .where('id', '=', payment.id)
      .where('settled_at', 'is', null)
      .execute();
  }
  if (movementId === null) return false;
  if (reserve > 0n) {
    const releaseAt = new Date(Date.parse(now) + terms.reserveDays * DAY_MS);
    await trx
      .insertInto('wallet_reserves')
      .values({
        wallet_id: wallet.id,
        payment_id: payment.id,
        amount: Number(reserve),
        release_at: releaseAt.toISOString(),
        released_at: null,
        released_amount: null,
      })
      .execute();
  }
  return true;
}
