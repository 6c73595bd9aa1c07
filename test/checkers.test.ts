// The checkers the suite trusts, shown to fail: auditWallet (the ledger check the crash matrix and
// the wallet tests rely on) and every invariant of bench/invariants.ts (the crash matrix's and
// bench:scale's verdict) are fed a state broken in one place and must say so. Each break is made, and
// checked, inside a transaction that is rolled back, so one real quiescent fixture serves them all.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Transaction } from 'kysely';
import {
  checkInvariants,
  type InvariantResult,
  type ReceivedDelivery,
  sha256Hex,
  signatureMatches,
} from '../bench/invariants.ts';
import type { Database } from '../src/db/database.ts';
import { auditWallet } from '../src/modules/wallet/service.ts';
import { webhooksInFlight } from '../src/modules/webhooks/worker-store.ts';
import { simulatorDb } from '../src/provider/simulator/store.ts';
import { createCheckout, pay } from './helpers/checkout.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { header, type Receiver, setEndpoint, startReceiver, waitUntil } from './webhooks-helpers.ts';

class Rollback extends Error {}

describe(`the checkers say so when fed a broken state (${DB_KIND})`, () => {
  let server: TestServer;
  let receiver: Receiver;
  let merchant: Merchant;
  let secret: string;
  let paymentId: number;
  let paymentPublicId: string;
  let refundId: number;

  /** Runs `check` on the state as `breakIt` leaves it, then undoes everything. */
  async function underBreak<T>(
    breakIt: (trx: Transaction<Database>) => Promise<unknown>,
    check: (trx: Transaction<Database>) => Promise<T>,
  ): Promise<T> {
    let result: T | undefined;
    await server.ctx.db
      .transaction()
      .execute(async (trx) => {
        await breakIt(trx);
        result = await check(trx);
        throw new Rollback();
      })
      .catch((error: unknown) => {
        if (!(error instanceof Rollback)) throw error;
      });
    return result as T;
  }

  function received(tamper: (deliveries: ReceivedDelivery[]) => ReceivedDelivery[] = (d) => d) {
    return tamper(
      receiver.requests.map((request) => ({
        deliveryId: header(request, 'x-webhook-delivery-id'),
        bodySha256: sha256Hex(request.body),
        signatureValid: signatureMatches(secret, request.body, header(request, 'x-webhook-signature')),
      })),
    );
  }

  const failing = (results: InvariantResult[]) =>
    results.filter((result) => result.problemCount > 0).map((result) => result.name);

  before(async () => {
    server = await startTestServer({ env: { KASSA_SIM_REFUND_DELAY_MS: '50' } });
    receiver = await startReceiver();
    merchant = await createTestMerchant(server, 'Checked Shop');
    secret = (await setEndpoint(server, merchant, `${receiver.url}/hooks`)) as string;
    const apiKey = await createTestKey(server, merchant);
    const paid = [];
    for (let i = 0; i < 2; i++) {
      const checkout = await createCheckout(server, apiKey);
      paid.push((await pay(server, checkout.token)).body);
    }
    paymentPublicId = paid[0].transaction_id as string;
    const refund = await call<{ refund_id: number }>(
      server,
      'POST',
      `/api/transactions/${paymentPublicId}/refund/`,
      { apiKey, body: { reason: 'checker fixture', amount: '10.00' } },
    );
    assert.equal(refund.status, 200, refund.text);
    refundId = refund.body.refund_id;
    const db = server.ctx.db;
    paymentId = (
      await db
        .selectFrom('payments')
        .select('id')
        .where('public_id', '=', paymentPublicId)
        .executeTakeFirstOrThrow()
    ).id;
    // Quiescent: the refund completed, every event dispatched and delivered.
    await waitUntil(
      async () => {
        const refundRow = await db
          .selectFrom('refunds')
          .select('status')
          .where('id', '=', refundId)
          .executeTakeFirstOrThrow();
        return refundRow.status === 'completed' && (await webhooksInFlight(db)) === 0;
      },
      20_000,
      'the fixture to come to rest',
    );
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  test('the unbroken fixture passes every invariant and its wallet audit is clean', async () => {
    const results = await checkInvariants(server.ctx.db, { received: received() });
    assert.deepEqual(failing(results), []);
    // At rest no refund is in flight, so that check has nothing to count (the crash matrix runs it at kills).
    for (const result of results.filter((r) => r.name !== 'at most one in-flight refund per payment'))
      assert.ok(result.checked > 0, `${result.name} checked nothing`);
    assert.deepEqual((await auditWallet(server.ctx.db, merchant.organizationId, 'production')).problems, []);
  });

  describe('auditWallet', () => {
    const audit = (trx: Transaction<Database>) => auditWallet(trx, merchant.organizationId, 'production');
    const walletId = async (trx: Transaction<Database>) =>
      (
        await trx
          .selectFrom('wallets')
          .select('id')
          .where('organization_id', '=', merchant.organizationId)
          .where('environment', '=', 'production')
          .executeTakeFirstOrThrow()
      ).id;

    test('a bucket that differs from its entries', async () => {
      const { problems } = await underBreak(
        (trx) =>
          trx
            .updateTable('wallets')
            .set((eb) => ({ balance: eb('balance', '+', 1) }))
            .where('organization_id', '=', merchant.organizationId)
            .execute(),
        audit,
      );
      assert.equal(problems.length, 1, problems.join('; '));
      assert.match(problems[0], /^balance is (\d+) but its entries sum to (\d+)$/);
    });

    test('a movement whose entries do not sum to zero (the bucket kept in step)', async () => {
      const { problems } = await underBreak(async (trx) => {
        const id = await walletId(trx);
        const movement = await trx
          .selectFrom('wallet_movements')
          .select('id')
          .where('wallet_id', '=', id)
          .orderBy('id')
          .executeTakeFirstOrThrow();
        await trx
          .insertInto('wallet_entries')
          .values({
            movement_id: movement.id,
            wallet_id: id,
            account: 'balance',
            amount: 7,
            created_at: new Date().toISOString(),
          })
          .execute();
        await trx
          .updateTable('wallets')
          .set((eb) => ({ balance: eb('balance', '+', 7) }))
          .where('id', '=', id)
          .execute();
      }, audit);
      assert.ok(problems.includes('entries sum to 7, not 0'), problems.join('; '));
      assert.ok(
        problems.some((problem) => /^movement \d+ sums to 7$/.test(problem)),
        problems.join('; '),
      );
      assert.ok(!problems.some((problem) => problem.startsWith('balance is')), problems.join('; '));
    });

    test('a hold whose offset is missing (balanced, buckets in step)', async () => {
      const { problems } = await underBreak(async (trx) => {
        const id = await walletId(trx);
        const now = new Date().toISOString();
        const movement = await trx
          .insertInto('wallet_movements')
          .values({
            wallet_id: id,
            kind: 'refund_hold',
            reference_id: 999_999,
            reference_public_id: 'RFbroken',
            amount: 5,
            created_at: now,
          })
          .returning('id')
          .executeTakeFirstOrThrow();
        await trx
          .insertInto('wallet_entries')
          .values([
            { movement_id: movement.id, wallet_id: id, account: 'held', amount: 5, created_at: now },
            { movement_id: movement.id, wallet_id: id, account: 'balance', amount: -5, created_at: now },
          ])
          .execute();
        await trx
          .updateTable('wallets')
          .set((eb) => ({ held: eb('held', '+', 5), balance: eb('balance', '-', 5) }))
          .where('id', '=', id)
          .execute();
      }, audit);
      assert.deepEqual(problems, ['hold_offset does not mirror held']);
    });
    // A negative bucket or a hold above balance + reserve cannot be made: the database's CHECK
    // constraints refuse them (auditWallet repeats those checks as a second line).
  });

  describe('bench/invariants.ts', () => {
    async function failingAfter(
      breakIt: (trx: Transaction<Database>) => Promise<unknown>,
      deliveries = received(),
    ) {
      return failing(await underBreak(breakIt, (trx) => checkInvariants(trx, { received: deliveries })));
    }

    test('wallet buckets = ledger: a bucket moved without an entry', async () => {
      assert.deepEqual(
        await failingAfter((trx) =>
          trx
            .updateTable('wallets')
            .set((eb) => ({ reserve: eb('reserve', '+', 3) }))
            .where('organization_id', '=', merchant.organizationId)
            .execute(),
        ),
        ['wallet buckets = sum of ledger entries, none negative'],
      );
    });

    test('one settlement per settled payment: a settled payment that says it never settled', async () => {
      assert.deepEqual(
        await failingAfter((trx) =>
          trx.updateTable('payments').set({ settled_at: null }).where('id', '=', paymentId).execute(),
        ),
        ['one settlement per settled payment, none for the others'],
      );
    });

    test('one hold, one debit or release per refund: a completed refund also released', async () => {
      assert.deepEqual(
        await failingAfter(async (trx) => {
          const wallet = await trx
            .selectFrom('wallets')
            .select('id')
            .where('organization_id', '=', merchant.organizationId)
            .executeTakeFirstOrThrow();
          await trx
            .insertInto('wallet_movements')
            .values({
              wallet_id: wallet.id,
              kind: 'refund_release',
              reference_id: refundId,
              reference_public_id: 'RFbroken',
              amount: 0,
              created_at: new Date().toISOString(),
            })
            .execute();
        }),
        ['one hold per refund; one debit per completed refund, one release per failed one'],
      );
    });

    test('at most one refund in flight per payment: two at once (the unique index dropped)', async () => {
      const names = await failingAfter(async (trx) => {
        await trx.schema.dropIndex('refunds_one_in_flight').execute();
        const refund = await trx
          .selectFrom('refunds')
          .selectAll()
          .where('id', '=', refundId)
          .executeTakeFirstOrThrow();
        const { id: _id, ...copy } = refund;
        await trx
          .insertInto('refunds')
          .values({ ...copy, public_id: 'RFsecondinflight1', status: 'processing' })
          .execute();
        await trx.updateTable('refunds').set({ status: 'processing' }).where('id', '=', refundId).execute();
      });
      assert.ok(names.includes('at most one in-flight refund per payment'), names.join('; '));
    });

    test("refunded amount = completed refunds: a payment's refunded amount off by a cent", async () => {
      assert.deepEqual(
        await failingAfter((trx) =>
          trx
            .updateTable('payments')
            .set((eb) => ({ refunded_amount: eb('refunded_amount', '+', 1) }))
            .where('id', '=', paymentId)
            .execute(),
        ),
        ["each payment's refunded amount = sum of its completed refunds"],
      );
    });

    test('provider and Kassa agree: the provider says a paid payment failed', async () => {
      assert.deepEqual(
        await failingAfter((trx) =>
          simulatorDb(trx)
            .updateTable('sim_payments')
            .set({ outcome: 'PAYMENT_FAILED' })
            .where('reference', '=', paymentPublicId)
            .execute(),
        ),
        ['the provider and Kassa agree on every payment and refund'],
      );
    });

    test('every event dispatched: one left undispatched', async () => {
      assert.deepEqual(
        await failingAfter(async (trx) => {
          const event = await trx
            .selectFrom('events')
            .select('id')
            .orderBy('id', 'desc')
            .executeTakeFirstOrThrow();
          await trx.updateTable('events').set({ dispatched_at: null }).where('id', '=', event.id).execute();
        }),
        ['every committed event dispatched, with a delivery when an endpoint was set'],
      );
    });

    test('every event received signed and intact: one delivery forged, one missing', async () => {
      const forged = received((deliveries) =>
        deliveries.map((d, i) => (i === 0 ? { ...d, signatureValid: false } : d)),
      );
      const onlyForged = forged.filter((d) => d.deliveryId === forged[0].deliveryId);
      const others = received().filter((d) => d.deliveryId !== forged[0].deliveryId);
      assert.deepEqual(await failingAfter(async () => {}, [...onlyForged, ...others]), [
        'every committed event received with a valid signature and its exact body',
      ]);
      assert.deepEqual(await failingAfter(async () => {}, received().slice(1)), [
        'every committed event received with a valid signature and its exact body',
      ]);
    });
  });
});
