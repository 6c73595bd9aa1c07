// The simulator's 3-D Secure: a challenge the customer answers on the hosted page (approve or fail), as
// a bank's access control server would. Its id is the capability: 160 random bits, known only to the
// page that got it in the attempt's next action. Approve: the attempt succeeds (or the card is saved);
// fail: it is declined "The 3-D Secure authentication failed." and the customer may try another card.
import { randomBase62 } from '../../lib/ids.ts';
import type { NextAction, ProviderAttempt } from '../types.ts';
import { AUTHENTICATION_FAILED, SUCCESS } from './script.ts';
import { attemptsOf, lockSimPayment, type SimContext, type SimDb, type SimPayment } from './store.ts';

export async function openChallenge(
  sim: SimContext,
  trx: SimDb,
  target: 'payment' | 'setup',
  targetId: string,
  attemptId: string | null,
): Promise<NextAction> {
  const nowIso = sim.clock().toISOString();
  const challengeId = `simchl_${randomBase62(27)}`;
  await trx
    .insertInto('sim_challenges')
    .values({
      challenge_id: challengeId,
      target,
      target_id: targetId,
      attempt_id: attemptId,
      status: 'open',
      created_at: nowIso,
      updated_at: nowIso,
    })
    .execute();
  return { type: 'simulator_challenge', challengeId };
}

function withAttempt(row: SimPayment, attemptId: string | null, change: Partial<ProviderAttempt>): string {
  return JSON.stringify(
    attemptsOf(row).map((known) => (known.attemptId === attemptId ? { ...known, ...change } : known)),
  );
}

/** A new attempt while a challenge waits: the waiting one ends declined, as a bank times it out. */
export async function abandonOpenChallenge(
  sim: SimContext,
  trx: SimDb,
  row: SimPayment,
): Promise<SimPayment> {
  const nowIso = sim.clock().toISOString();
  const open = await trx
    .updateTable('sim_challenges')
    .set({ status: 'abandoned', updated_at: nowIso })
    .where('target', '=', 'payment')
    .where('target_id', '=', row.provider_payment_id)
    .where('status', '=', 'open')
    .returning('attempt_id')
    .execute();
  let attempts = row.attempts;
  for (const challenge of open) {
    attempts = withAttempt({ ...row, attempts }, challenge.attempt_id, {
      status: 'requires_payment_method',
      errorMessage: 'The 3-D Secure authentication was not completed.',
      declineCode: 'authentication_failed',
    });
  }
  return trx
    .updateTable('sim_payments')
    .set({ attempts, next_action: null, updated_at: nowIso })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export type ChallengeAnswer = 'approve' | 'fail';

export interface ChallengeResult {
  status: 'approved' | 'failed' | 'abandoned';
  target: 'payment' | 'setup';
  /** The provider payment id or setup id the challenge belonged to. */
  targetId: string;
}

async function answerPayment(
  sim: SimContext,
  trx: SimDb,
  targetId: string,
  attemptId: string | null,
  approve: boolean,
) {
  const row = await lockSimPayment(sim, trx, 'provider_payment_id', targetId);
  if (!row) return;
  const answer = approve ? SUCCESS : AUTHENTICATION_FAILED;
  await trx
    .updateTable('sim_payments')
    .set({
      attempts: withAttempt(row, attemptId, {
        status: answer.attemptStatus,
        errorMessage: answer.errorMessage,
        declineCode: answer.declineCode,
      }),
      outcome: answer.outcome,
      deposit_status: answer.depositStatus,
      next_action: null,
      updated_at: sim.clock().toISOString(),
    })
    .where('id', '=', row.id)
    .execute();
}

async function answerSetup(sim: SimContext, trx: SimDb, setupId: string, approve: boolean) {
  await trx
    .updateTable('sim_setups')
    .set(
      approve
        ? { status: 'succeeded', next_action: null, updated_at: sim.clock().toISOString() }
        : {
            status: 'requires_payment_method',
            payment_method_id: null,
            error_code: AUTHENTICATION_FAILED.declineCode,
            error_message: AUTHENTICATION_FAILED.errorMessage,
            next_action: null,
            updated_at: sim.clock().toISOString(),
          },
    )
    .where('setup_id', '=', setupId)
    .where('status', '=', 'requires_action')
    .execute();
}

/**
 * The customer's answer to a challenge. Answering again returns the first answer's result; null when no
 * such challenge exists.
 */
export async function answerChallenge(
  sim: SimContext,
  challengeId: string,
  answer: ChallengeAnswer,
): Promise<ChallengeResult | null> {
  return sim.db.transaction().execute(async (trx) => {
    const query = trx.selectFrom('sim_challenges').selectAll().where('challenge_id', '=', challengeId);
    const challenge = await (sim.postgres ? query.forUpdate() : query).executeTakeFirst();
    if (!challenge) return null;
    const result = { target: challenge.target, targetId: challenge.target_id };
    if (challenge.status !== 'open') return { ...result, status: challenge.status };
    const approve = answer === 'approve';
    if (challenge.target === 'payment') {
      await answerPayment(sim, trx, challenge.target_id, challenge.attempt_id, approve);
    } else {
      await answerSetup(sim, trx, challenge.target_id, approve);
    }
    const status = approve ? 'approved' : 'failed';
    await trx
      .updateTable('sim_challenges')
      .set({ status, updated_at: sim.clock().toISOString() })
      .where('id', '=', challenge.id)
      .execute();
    return { ...result, status };
  });
}
