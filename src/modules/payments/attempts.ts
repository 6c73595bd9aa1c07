// A payment's card attempts as the provider reports them: new ones are added, undecided ones
// (pending) take the provider's later answer, decided ones never change. The card's brand and last
// 4 digits come from the hosted step that made the attempt; the number itself is never stored.
import type { Executor } from '../../db/database.ts';
import type { ProviderAttempt } from '../../provider/types.ts';
import * as store from './store.ts';
import type { DepositAttemptRow, PaymentRow } from './table.ts';

/** Attempt statuses that can still change (the bank, the deposit or the customer's 3-D Secure step has not answered). */
const UNDECIDED_ATTEMPTS = new Set(['pending', 'processing', 'requires_action']);

export interface CardSummary {
  attemptId: string;
  brand: string;
  last4: string;
}

/**
 * Records the provider's attempts. Never moves backwards. Returns whether the visible history changed,
 * and the payment's attempts as they now stand, newest first (as `attemptsOf` reads them), so that
 * a caller answering with them need not read them again.
 */
export async function recordAttempts(
  trx: Executor,
  payment: PaymentRow,
  attempts: ProviderAttempt[],
  card: CardSummary | null,
  /** The payment's attempts as read under the caller's lock, newest first (else they are read here). */
  recorded: DepositAttemptRow[] | null = null,
): Promise<{ changed: boolean; attempts: DepositAttemptRow[] }> {
  const rows = recorded ?? (await store.attemptsOf(trx, payment.id));
  const known = new Map(rows.map((row) => [row.provider_attempt_id, row]));
  let changed = false;
  for (const attempt of [...attempts].reverse()) {
    const row = known.get(attempt.attemptId);
    const ownCard = card !== null && card.attemptId === attempt.attemptId ? card : null;
    if (!row) {
      const inserted = await trx
        .insertInto('deposit_attempts')
        .values({
          payment_id: payment.id,
          provider_attempt_id: attempt.attemptId,
          status: attempt.status,
          provider_payment_id: attempt.paymentId,
          attempted_at: attempt.attemptedAt,
          error_message: attempt.errorMessage,
          payment_method: attempt.paymentMethod,
          card_brand: ownCard?.brand ?? null,
          card_last4: ownCard?.last4 ?? null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      rows.push(inserted);
      changed = true;
      continue;
    }
    const moved =
      UNDECIDED_ATTEMPTS.has(row.status) &&
      (row.status !== attempt.status || row.error_message !== attempt.errorMessage);
    const needsCard = ownCard !== null && row.card_brand === null;
    if (!moved && !needsCard) continue;
    const set = {
      ...(moved ? { status: attempt.status, error_message: attempt.errorMessage } : {}),
      ...(needsCard ? { card_brand: ownCard.brand, card_last4: ownCard.last4 } : {}),
    };
    await trx.updateTable('deposit_attempts').set(set).where('id', '=', row.id).execute();
    Object.assign(row, set);
    if (moved) changed = true;
  }
  // attemptsOf's order: newest attempt first, the later row first among equal times.
  rows.sort((a, b) =>
    a.attempted_at === b.attempted_at ? b.id - a.id : a.attempted_at < b.attempted_at ? 1 : -1,
  );
  return { changed, attempts: rows };
}
