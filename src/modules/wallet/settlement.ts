// CONTRACT (called by the payments module): credits a paid payment whose deposit succeeded, exactly
// once, inside the caller's transaction: reserve += net_usd × rolling_reserve_percent/100 (half-up),
// balance += the rest, as one ledger movement. Also stamps payments.settled_at and schedules the
// reserve part's release after rolling_reserve_days. Returns false if it was already settled.
import type { Executor } from '../../db/database.ts';
import { deferWrite } from '../../db/write-behind.ts';
import { toBigInt } from '../../lib/money.ts';
import type { PaymentRow } from '../payments/table.ts';
import { settlementSplit } from './arithmetic.ts';
import { creditWallet, type PostedCredit, postCreditMovement } from './ledger.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Credits a paid payment's net to its wallet once (the movement is unique per payment) and stamps its
 * settled_at. A caller that stamps settled_at in its own update of the row (applyProviderState) uses
 * postSettlement and creditSettlement instead.
 */
export async function settlePayment(trx: Executor, payment: PaymentRow, now: string): Promise<boolean> {
  // settled_at is stamped even when the movement was posted before: a settled payment always carries it.
  await trx
    .updateTable('payments')
    .set({ settled_at: now })
    .where('id', '=', payment.id)
    .where('settled_at', 'is', null)
    .execute();
  const posted = await postSettlement(trx, payment, now);
  if (posted === null) return false;
  await creditSettlement(trx, payment, posted, now);
  return true;
}

/**
 * The settlement's movement: the organization's wallet and reserve terms come back with it. Null (nothing
 * written) when the payment's settlement was posted before. A credit needs no look at the wallet's
 * buckets, so the wallet is not locked first: its row is updated last (creditSettlement), which keeps the
 * organization's other payments waiting on that row for the shortest time.
 */
export function postSettlement(
  trx: Executor,
  payment: PaymentRow,
  now: string,
): Promise<PostedCredit | null> {
  return postCreditMovement(trx, payment.organization_id, payment.environment, {
    kind: 'settlement',
    referenceId: payment.id,
    referencePublicId: payment.public_id,
    amount: toBigInt(payment.net_usd),
    now,
  });
}

/**
 * The rest of a posted settlement: the reserve's row, the entries and the wallet's update, last in the
 * transaction. Nothing is read back (write-behind.ts).
 */
export async function creditSettlement(
  trx: Executor,
  payment: PaymentRow,
  posted: PostedCredit,
  now: string,
): Promise<void> {
  const net = toBigInt(payment.net_usd);
  const { reserve, balance } = settlementSplit(net, toBigInt(posted.terms.reserveBp));
  if (reserve > 0n) {
    const releaseAt = new Date(Date.parse(now) + posted.terms.reserveDays * DAY_MS);
    await deferWrite(
      trx,
      trx.insertInto('wallet_reserves').values({
        wallet_id: posted.walletId,
        payment_id: payment.id,
        amount: Number(reserve),
        release_at: releaseAt.toISOString(),
        released_at: null,
        released_amount: null,
      }),
    );
  }
  await creditWallet(trx, posted, { settlements: -net, reserve, balance }, now);
}
