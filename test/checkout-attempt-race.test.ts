// A card attempt that waits for another attempt's transaction must see what that transaction did. The
// pay route checks the checkout first (a read, no lock), then locks the session and reads its payment
// again before it records an operation: if the other attempt failed the payment for good (the fifth
// decline) or paid it in between, this attempt is refused and nothing reaches the provider. On
// PostgreSQL the payment must be read by its own statement after the lock: a locking read that waited
// returns the latest version only of the rows it locks, so a payment joined into it would still show
// `processing` (helper-20's review of 9964bc2).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { isPostgres } from '../src/db/connection.ts';
import { lockSession, updateSession } from '../src/modules/checkout/store.ts';
import { movePayment } from '../src/modules/payments/transitions.ts';
import { CARDS, createCheckout, pay, paymentRow } from './helpers/checkout.ts';
import { createTestKey, createTestMerchant, startTestServer, type TestServer } from './helpers/server.ts';

describe('a card attempt waiting on another attempt', () => {
  let server: TestServer;
  let key: string;
  before(async () => {
    server = await startTestServer({ worker: false });
    key = await createTestKey(server, await createTestMerchant(server, 'Race Shop'));
  });
  after(() => server.close());

  /** Until a PostgreSQL backend waits on a row lock (SQLite: a moment for the request to queue). */
  async function someoneWaitsOnALock(): Promise<void> {
    if (!isPostgres(server.ctx.db)) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      return;
    }
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const { rows } = await sql<{ n: number }>`
        select count(*)::int as n from pg_stat_activity
        where wait_event_type = 'Lock' and datname = current_database()`.execute(server.ctx.db);
      if (rows[0].n > 0) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.fail('the second attempt never waited on the session lock');
  }

  test('sees the payment the other attempt failed, and is refused without reaching the provider', async () => {
    const checkout = await createCheckout(server, key);
    const declined = await pay(server, checkout.token, CARDS.declined);
    assert.equal(declined.body.payment_status, 'processing', declined.text);
    const payment = await paymentRow(server, declined.body.transaction_id as string);
    const session = await server.ctx.db
      .selectFrom('checkout_sessions')
      .select('id')
      .where('public_id', '=', checkout.checkout_id)
      .executeTakeFirstOrThrow();
    const operations = async () =>
      (
        await server.ctx.db
          .selectFrom('provider_operations')
          .select('id')
          .where('subject_id', '=', payment.id)
          .execute()
      ).length;
    const before = await operations();

    // The other attempt's last transaction, held open: the session locked, the payment failed (as the
    // fifth decline fails it), the session's attempt lock cleared.
    const { promise: released, resolve: release } = Promise.withResolvers<void>();
    const { promise: lockedYet, resolve: locked } = Promise.withResolvers<void>();
    const other = server.ctx.db.transaction().execute(async (trx) => {
      await lockSession(trx, session.id);
      const now = new Date().toISOString();
      assert.ok(await movePayment(trx, payment.id, 'processing', 'failed', now));
      await updateSession(trx, session.id, { attempt_locked_until: null, updated_at: now });
      locked();
      await released;
    });
    await lockedYet;
    const attempt = pay(server, checkout.token, CARDS.success);
    await someoneWaitsOnALock();
    release();
    await other;
    const answer = await attempt;
    assert.equal(answer.status, 410, answer.text);
    assert.equal((await paymentRow(server, payment.public_id)).status, 'failed');
    assert.equal(await operations(), before, 'no operation was recorded for the refused attempt');
  });
});
