// CONTRACT (called by the payments module): credits a paid payment whose deposit succeeded, exactly
// once, inside the caller's transaction: reserve += net_usd × rolling_reserve_percent/100 (half-up),
// balance += the rest, as one ledger movement. Also stamps payments.settled_at and schedules the
// reserve part's release after rolling_reserve_days. Returns false if it was already settled.
import type { Executor } from '../../db/database.ts';
import { toBigInt } from '../../lib/money.ts';
import type { PaymentRow } from '../payments/table.ts';
import { settlementSplit } from './arithmetic.ts';
import { creditWallet, postCreditMovement } from './ledger.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Credits a paid payment's net to its wallet once (the movement is unique per payment) and stamps its
 * settled_at. `stamped`: the caller already set settled_at in its own update of the row, under the same
 * transaction's lock (applyProviderState), so it is not stamped again. A credit needs no look at the
 * wallet's buckets, so the wallet is not locked first: its row is updated last (creditWallet), which keeps
 * the organization's other payments waiting on that row for the shortest time.
 */
export async function settlePayment(
  trx: Executor,
  payment: PaymentRow,
  now: string,
  stamped = false,
): Promise<boolean> {
  // settled_at is stamped even when the movement was posted before: a settled payment always carries it.
  if (!stamped) {
    await trx
      .updateTable('payments')
      .set({ settled_at: now })
      .where('id', '=', payment.id)
      .where('settled_at', 'is', null)
      .execute();
  }
  const net = toBigInt(payment.net_usd);
  const posted = await postCreditMovement(trx, payment.organization_id, payment.environment, {
    kind: 'settlement',
    referenceId: payment.id,
    referencePublicId: payment.public_id,
    amount: net,
    now,
  });
  if (posted === null) return false;
  const { reserve, balance } = settlementSplit(net, toBigInt(posted.terms.reserveBp));
  if (reserve > 0n) {
    const releaseAt = new Date(Date.parse(now) + posted.terms.reserveDays * DAY_MS);
    await trx
      .insertInto('wallet_reserves')
      .values({
        wallet_id: posted.walletId,
        payment_id: payment.id,
        amount: Number(reserve),
        release_at: releaseAt.toISOString(),
        released_at: null,
        released_amount: null,
      })
      .execute();
  }
  await creditWallet(trx, posted, { settlements: -net, reserve, balance }, now);
  return true;
}
