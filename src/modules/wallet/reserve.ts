// Rolling-reserve release: each settlement's reserve part moves to the balance once it is due.
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { lesserOf, lockWallet, postMovement } from './ledger.ts';

const BATCH = 100;

/**
 * Releases one due reserve. The wallet is locked first, then the reserve row is claimed with a
 * conditional update, so concurrent workers release it once. Refunds debit the reserve when the
 * balance runs out, so what is released is at most what the reserve still holds beyond the other
 * unreleased rows (what refunds took is counted against the rows released first).
 */
async function releaseReserve(trx: Executor, reserveId: number, now: string): Promise<boolean> {
  const row = await trx
    .selectFrom('wallet_reserves')
    .innerJoin('wallets', 'wallets.id', 'wallet_reserves.wallet_id')
    .innerJoin('payments', 'payments.id', 'wallet_reserves.payment_id')
    .select([
      'wallet_reserves.amount',
      'wallets.organization_id',
      'wallets.environment',
      'payments.public_id',
      'wallet_reserves.payment_id',
    ])
    .where('wallet_reserves.id', '=', reserveId)
    .executeTakeFirst();
  if (!row) return false;
  const wallet = await lockWallet(trx, row.organization_id, row.environment as Environment, now);
  // What refunds took from the reserve came out of the rows released first: this row releases what the
  // reserve holds beyond the other unreleased rows, at most its own amount. The wallet's total alone
  // would let an early row release a later payment's reserve (taken by a refund, then refilled by a
  // newer settlement) months before it is due.
  const others = await trx
    .selectFrom('wallet_reserves')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('amount'), eb.val(0)).as('amount'))
    .where('wallet_id', '=', wallet.id)
    .where('released_at', 'is', null)
    .where('id', '<>', reserveId)
    .executeTakeFirstOrThrow();
  const beyondOthers = wallet.reserve - toBigInt(others.amount);
  const amount = lesserOf(toBigInt(row.amount), beyondOthers > 0n ? beyondOthers : 0n);
  const claimed = await trx
    .updateTable('wallet_reserves')
    .set({ released_at: now, released_amount: Number(amount) })
    .where('id', '=', reserveId)
    .where('released_at', 'is', null)
    .executeTakeFirst();
  if (Number(claimed.numUpdatedRows) !== 1) return false;
  await postMovement(trx, wallet, {
    kind: 'reserve_release',
    referenceId: row.payment_id,
    referencePublicId: row.public_id,
    amount,
    entries: { reserve: -amount, balance: amount },
    now,
  });
  return true;
}

/** Worker step: releases the reserves due by now; returns how many it released. */
export async function releaseDueReserves(ctx: Pick<AppContext, 'db' | 'clock'>): Promise<number> {
  const now = ctx.clock().toISOString();
  const due = await ctx.db
    .selectFrom('wallet_reserves')
    .select('id')
    .where('released_at', 'is', null)
    .where('release_at', '<=', now)
    .orderBy('release_at')
    .limit(BATCH)
    .execute();
  let released = 0;
  for (const { id } of due) {
    if (await ctx.db.transaction().execute((trx) => releaseReserve(trx, id, now))) released += 1;
  }
  return released;
}
