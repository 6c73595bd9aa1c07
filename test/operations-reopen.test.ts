// A write-ahead row reopened for a new call under the same key (a renewal try the provider refused, made
// again an hour later) counts the reconciler's reads and its "never made" margin from the new call: kept
// from the refused one, a lost answer to the new call could be taken for never made at the first read,
// and the next try would charge while this one still lands.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { recordOperation, reopenOperation, settleOperation } from '../src/provider/operations/store.ts';
import { createTestMerchant, DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer({ worker: false });
});
after(() => server?.close());

test(`a reopened operation's reads and age count from the new call (${DB_KIND})`, async () => {
  const owner = await createTestMerchant(server, 'Reopen Shop');
  const { db, config } = server.ctx;
  const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
  const operation = await recordOperation(
    db,
    {
      kind: 'renewal_charge',
      idempotencyKey: 'kassa-renew-test-1',
      provider: 'stripe',
      environment: 'production',
      organizationId: owner.organizationId,
      subjectType: 'subscription_cycle',
      subjectId: 1,
      reference: 'SUBtest',
    },
    hourAgo,
    config.reconcileScheduleMs,
  );
  await db.updateTable('provider_operations').set({ reads: 3 }).where('id', '=', operation.id).execute();
  await settleOperation(
    db,
    operation.id,
    {
      status: 'failed',
      code: 'rate_limited',
      message: 'Too many requests',
      retryable: true,
      providerError: true,
    },
    null,
    hourAgo,
  );
  const now = new Date().toISOString();
  const reopened = await reopenOperation(db, operation.id, now, config.reconcileScheduleMs);
  assert.deepEqual(
    [reopened.state, Number(reopened.reads), reopened.created_at, reopened.outcome],
    ['in_flight', 0, now, null],
  );
});
