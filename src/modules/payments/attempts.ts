// A payment's card attempts as the provider reports them: new ones are added, undecided ones
// (pending) take the provider's later answer, decided ones never change. The card's brand and last
// 4 digits come from the hosted step that made the attempt; the number itself is never stored.
import type { Executor } from '../../db/database.ts';
import type { ProviderAttempt } from '../../provider/types.ts';
import * as store from './store.ts';
import type { PaymentRow } from './table.ts';

/** Attempt statuses that can still change (the bank, the deposit or the customer's 3-D Secure step has not answered). */
const UNDECIDED_ATTEMPTS = new Set(['pending', 'processing', 'requires_action']);

export interface CardSummary {
  attemptId: string;
  brand: string;
  last4: string;
}

/** Records the provider's attempts; returns whether the visible history changed. Never moves backwards. */
export async function recordAttempts(
  trx: Executor,
  payment: PaymentRow,
  attempts: ProviderAttempt[],
  card: CardSummary | null,
): Promise<boolean> {
  const known = new Map(
    (await store.attemptsOf(trx, payment.id)).map((row) => [row.provider_attempt_id, row]),
  );
  let changed = false;
  for (const attempt of [...attempts].reverse()) {
    const row = known.get(attempt.attemptId);
    const ownCard = card !== null && card.attemptId === attempt.attemptId ? card : null;
    if (!row) {
      await trx
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
        .execute();
      changed = true;
      continue;
    }
    const moved =
      UNDECIDED_ATTEMPTS.has(row.status) &&
      (row.status !== attempt.status || row.error_message !== attempt.errorMessage);
    const needsCard = ownCard !== null && row.card_brand === null;
    if (!moved && !needsCard) continue;
    await trx
      .updateTable('deposit_attempts')
      .set({
        ...(moved ? { status: attempt.status, error_message: attempt.errorMessage } : {}),
        ...(needsCard ? { card_brand: ownCard.brand, card_last4: ownCard.last4 } : {}),
      })
      .where('id', '=', row.id)
      .execute();
    if (moved) changed = true;
  }
  return changed;
}
