// A payment's card attempts as the provider reports them: new ones are added, undecided ones
// (pending) take the provider's later answer, decided ones never change. The card's brand and last
// 4 digits come from the hosted step that made the attempt; the number itself is never stored.
import type { Insertable } from 'kysely';
import type { Executor } from '../../db/database.ts';
import { deferWrite } from '../../db/write-behind.ts';
import type { ProviderAttempt } from '../../provider/types.ts';
import type { DepositAttemptRow, DepositAttemptsTable, PaymentRow } from './table.ts';

/** Attempt statuses that can still change (the bank, the deposit or the customer's 3-D Secure step has not answered). */
const UNDECIDED_ATTEMPTS = new Set(['pending', 'processing', 'requires_action']);

export interface CardSummary {
  attemptId: string;
  brand: string;
  last4: string;
}

/**
 * A payment's attempt as recordAttempts leaves it. `id` is null for an attempt it inserts: the id is
 * not read back (the insert goes with the transaction's next statement, write-behind.ts), and nothing
 * needs it but the order, where such a row is the latest (the payment's attempts are written under its
 * row lock only, so every row before it has a lower id).
 */
export type RecordedAttempt = Omit<DepositAttemptRow, 'id'> & { id: number | null };

/** What recording the provider's attempts changes, worked out before anything is written. */
export interface AttemptsPlan {
  /** The visible history changes (an attempt added, or an undecided one moved). */
  changed: boolean;
  /** The payment's attempts as they will stand, newest first (as `attemptsOf` reads them). */
  attempts: RecordedAttempt[];
  inserts: Insertable<DepositAttemptsTable>[];
  updates: { id: number; set: Partial<DepositAttemptRow> }[];
}

/**
 * Works out the provider's attempts against the payment's attempts as read under the caller's lock
 * (newest first). Never moves backwards.
 */
export function planAttempts(
  payment: PaymentRow,
  rows: readonly DepositAttemptRow[],
  attempts: ProviderAttempt[],
  card: CardSummary | null,
): AttemptsPlan {
  const recorded: RecordedAttempt[] = rows.map((row) => ({ ...row }));
  const known = new Map(recorded.map((row) => [row.provider_attempt_id, row]));
  const plan: AttemptsPlan = { changed: false, attempts: recorded, inserts: [], updates: [] };
  /** The rows inserted here, in the order of their inserts (the later, the higher its id will be). */
  const inserted = new Map<RecordedAttempt, number>();
  for (const attempt of [...attempts].reverse()) {
    const row = known.get(attempt.attemptId);
    const ownCard = card !== null && card.attemptId === attempt.attemptId ? card : null;
    if (!row) {
      const values = {
        payment_id: payment.id,
        provider_attempt_id: attempt.attemptId,
        status: attempt.status,
        provider_payment_id: attempt.paymentId,
        attempted_at: attempt.attemptedAt,
        error_message: attempt.errorMessage ?? null,
        payment_method: attempt.paymentMethod,
        card_brand: ownCard?.brand ?? null,
        card_last4: ownCard?.last4 ?? null,
      };
      plan.inserts.push(values);
      const added: RecordedAttempt = { id: null, ...values };
      recorded.push(added);
      inserted.set(added, inserted.size);
      plan.changed = true;
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
    // A known row has its id (only the ones inserted here have none, and none of them is known).
    if (row.id !== null) plan.updates.push({ id: row.id, set });
    Object.assign(row, set);
    if (moved) plan.changed = true;
  }
  // attemptsOf's order: newest attempt first, the later row first among equal times.
  const later = (a: RecordedAttempt, b: RecordedAttempt) => {
    if (a.id !== null && b.id !== null) return b.id - a.id;
    if (a.id === null && b.id === null) return (inserted.get(b) ?? 0) - (inserted.get(a) ?? 0);
    return a.id === null ? -1 : 1;
  };
  recorded.sort((a, b) =>
    a.attempted_at === b.attempted_at ? later(a, b) : a.attempted_at < b.attempted_at ? 1 : -1,
  );
  return plan;
}

/**
 * Writes a plan's inserts and updates. Nothing is read back: in a transaction on PostgreSQL they go with
 * its next statement (write-behind.ts); several rows of one table are flushed one after the other there.
 */
export async function writeAttempts(trx: Executor, plan: AttemptsPlan): Promise<void> {
  if (plan.inserts.length > 0) await deferWrite(trx, trx.insertInto('deposit_attempts').values(plan.inserts));
  for (const { id, set } of plan.updates)
    await deferWrite(trx, trx.updateTable('deposit_attempts').set(set).where('id', '=', id));
}
