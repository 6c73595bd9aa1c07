import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  call,
  createTestKey,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { assertLedgerBalanced, createPaidPayment } from './helpers/wallet-fixtures.ts';

describe('dashboard refunds with an emailed verification code', () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer({ env: { KASSA_SIM_REFUND_DELAY_MS: '600000' } });
    merchant = await createTestMerchant(server, 'Dash Shop');
  });
  after(() => server.close());

  const mailDir = () => join(server.env.KASSA_DATA_DIR, 'mail');
  const mails = () => {
    try {
      return readdirSync(mailDir()).sort();
    } catch {
      return [];
    }
  };

  /** Asks for a code and reads it from the development mailbox (the newest .eml file). */
  async function requestCode(who: Merchant = merchant): Promise<string> {
    const before = mails().length;
    const response = await call(server, 'POST', '/api/refunds/verification-code/', { token: who.token });
    assert.equal(response.status, 202, response.text);
    const files = mails();
    assert.equal(files.length, before + 1);
    const eml = readFileSync(join(mailDir(), files[files.length - 1]), 'utf8');
    assert.match(eml, new RegExp(`^To: ${who.email}`, 'm'));
    const code = /verification code for .* is (\d{6})\./.exec(eml)?.[1];
    assert.ok(code, 'the mail carries a 6-digit code');
    return code;
  }

  const refund = (body: Record<string, unknown>, token = merchant.token) =>
    call<Record<string, unknown>>(server, 'POST', '/api/refunds/', { token, body });

  test('a valid code refunds with the API creation shape, and works only once', async () => {
    const payment = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 5000n,
    });
    const code = await requestCode();
    const response = await refund({
      transaction_id: payment.public_id,
      amount: '10.00',
      reason: 'Goodwill',
      verification_code: code,
    });
    assert.equal(response.status, 200, response.text);
    assert.deepEqual(Object.keys(response.body).sort(), [
      'amount',
      'amount_in_cents',
      'amount_usd',
      'currency',
      'id',
      'refund_id',
      'refund_public_id',
      'status',
      'transaction',
      'transaction_id',
    ]);
    assert.equal(response.body.status, 'processing');
    assert.equal(response.body.transaction_id, payment.id);
    const other = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 5000n,
    });
    const reused = await refund({ transaction_id: other.id, reason: 'Again', verification_code: code });
    assert.equal(reused.status, 400);
    assert.match(String(reused.body.detail), /^verification_code: /);
    await assertLedgerBalanced(server.ctx, merchant.organizationId);
  });

  test('a refund refused by the rules keeps the code usable; a sandbox payment is refundable too', async () => {
    const sandbox = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      environment: 'sandbox',
      gross: 2000n,
    });
    const code = await requestCode();
    const tooMuch = await refund({
      transaction_id: sandbox.public_id,
      amount: '99.00',
      reason: 'x',
      verification_code: code,
    });
    assert.equal(tooMuch.status, 400);
    assert.match(String(tooMuch.body.detail), /^Refund amount exceeds remaining refundable amount/);
    const ok = await refund({ transaction_id: sandbox.public_id, reason: 'x', verification_code: code });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.amount, '20.00');
  });

  test('a wrong code is refused, and after five tries even the right one is', async () => {
    const payment = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 5000n,
    });
    const code = await requestCode();
    const wrong = code === '000000' ? '111111' : '000000';
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const response = await refund({ transaction_id: payment.id, reason: 'x', verification_code: wrong });
      assert.equal(response.status, 400);
      assert.match(String(response.body.detail), /^verification_code: /);
    }
    const right = await refund({ transaction_id: payment.id, reason: 'x', verification_code: code });
    assert.equal(right.status, 400);
    assert.match(String(right.body.detail), /too many attempts/);
    const fresh = await requestCode();
    assert.equal(
      (await refund({ transaction_id: payment.id, reason: 'x', verification_code: fresh })).status,
      200,
    );
  });

  test('a new code replaces the previous one; an expired code is refused', async () => {
    const payment = await createPaidPayment(server.ctx, {
      organizationId: merchant.organizationId,
      gross: 5000n,
    });
    const old = await requestCode();
    // Two random 6-digit codes can coincide (one time in a million): ask again until they differ, so
    // the stale code's refusal is always checked.
    let current = await requestCode();
    for (let tries = 0; current === old && tries < 3; tries += 1) current = await requestCode();
    assert.notEqual(current, old);
    const stale = await refund({ transaction_id: payment.id, reason: 'x', verification_code: old });
    assert.equal(stale.status, 400);
    assert.match(String(stale.body.detail), /^verification_code: /);
    await server.ctx.db
      .updateTable('refund_verification_codes')
      .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
      .where('user_id', '=', (await userId()).id)
      .execute();
    const expired = await refund({ transaction_id: payment.id, reason: 'x', verification_code: current });
    assert.equal(expired.status, 400);
    assert.match(String(expired.body.detail), /^verification_code: /);
  });

  const userId = () =>
    server.ctx.db
      .selectFrom('users')
      .select('id')
      .where('email', '=', merchant.email)
      .executeTakeFirstOrThrow();

  test('codes are rate limited per user: past the limit a 429 with Retry-After, no mail, the last code still works', async () => {
    const limited = await startTestServer({
      env: {
        KASSA_RATE_LIMIT_VERIFICATION_CODES: '2',
        KASSA_RATE_LIMIT_VERIFICATION_CODES_WINDOW_MS: '600000',
      },
    });
    try {
      const owner = await createTestMerchant(limited, 'Limited Shop');
      const other = await createTestMerchant(limited, 'Other Shop');
      const ask = (who: Merchant) =>
        call(limited, 'POST', '/api/refunds/verification-code/', { token: who.token });
      assert.equal((await ask(owner)).status, 202);
      assert.equal((await ask(owner)).status, 202);
      const mailbox = join(limited.env.KASSA_DATA_DIR, 'mail');
      const mailed = readdirSync(mailbox).length;
      const refused = await ask(owner);
      assert.equal(refused.status, 429, refused.text);
      assert.match(String(refused.body.detail), /^Too many verification codes requested/);
      assert.ok(Number(refused.headers.get('retry-after')) > 0);
      assert.equal(readdirSync(mailbox).length, mailed, 'a refused request mails nothing');
      assert.equal((await ask(other)).status, 202, 'the limit is per user');
      const payment = await createPaidPayment(limited.ctx, {
        organizationId: owner.organizationId,
        gross: 5000n,
      });
      const newest = readdirSync(mailbox)
        .sort()
        .map((file) => readFileSync(join(mailbox, file), 'utf8'))
        .filter((eml) => eml.includes(`To: ${owner.email}`))
        .pop();
      const code = /verification code for .* is (\d{6})\./.exec(newest ?? '')?.[1];
      const response = await call(limited, 'POST', '/api/refunds/', {
        token: owner.token,
        body: {
          transaction_id: payment.public_id,
          amount: '1.00',
          reason: 'Goodwill',
          verification_code: code,
        },
      });
      assert.equal(response.status, 200, response.text);
    } finally {
      await limited.close();
    }
  });

  test('only a dashboard session may use it: an API key gets 405, no credentials 401', async () => {
    const key = await createTestKey(server, merchant);
    const withKey = await call(server, 'POST', '/api/refunds/', {
      apiKey: key,
      body: { transaction_id: 'TX', reason: 'x', verification_code: '123456' },
    });
    assert.equal(withKey.status, 405);
    assert.equal((await call(server, 'POST', '/api/refunds/', { body: {} })).status, 401);
    assert.equal((await call(server, 'POST', '/api/refunds/verification-code/')).status, 401);
    const other = await createTestMerchant(server);
    const theirs = await createPaidPayment(server.ctx, {
      organizationId: other.organizationId,
      gross: 5000n,
    });
    const code = await requestCode();
    const response = await refund({ transaction_id: theirs.public_id, reason: 'x', verification_code: code });
    assert.equal(response.status, 404);
    const missing = await refund({ transaction_id: theirs.public_id, reason: 'x' });
    assert.equal(missing.status, 400);
    assert.match(String(missing.body.detail), /^verification_code: this field is required/);
  });
});
