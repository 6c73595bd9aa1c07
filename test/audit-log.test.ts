// The audit log: an entry for every action the decisions list (changes from the dashboard and the CLI,
// logins and failures, key use from a new address, refunds and payouts), each with its actor and address;
// written in the transaction of the change (a change that rolls back leaves no entry; an entry that cannot
// be written rolls the change back); the list with its filters and the CSV export; kept 400 days.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { totpCode } from '../src/modules/auth/totp.ts';
import { settlePayout } from '../src/modules/payouts/service.ts';
import { pruneExpiredRecords } from '../src/modules/retention/prune.ts';
import { addMember, enableTwoFactor, mailedToken } from './helpers/accounts.ts';
import {
  call,
  createTestKey,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import { insertSubscription } from './helpers/subscriptions.ts';
import { createPaidPayment } from './helpers/wallet-fixtures.ts';

interface Entry {
  id: number;
  at: string;
  actor: { type: string; id: number | null; email: string | null };
  action: string;
  target: { type: string; id: string } | null;
  ip: string | null;
  user_agent: string | null;
  details: Record<string, unknown>;
}

const DAY = 24 * 3600 * 1000;

describe(`audit log (${DB_KIND})`, () => {
  let server: TestServer;
  let now = Date.now();
  let owner: Merchant;

  before(async () => {
    server = await startTestServer({
      clock: () => new Date(now),
      env: { KASSA_SIM_REFUND_DELAY_MS: '600000', KASSA_RETENTION_DAYS: '1' },
    });
    owner = await createTestMerchant(server, 'Audited Shop');
  });
  after(() => server.close());

  async function entries(query = '', token = owner.token): Promise<Entry[]> {
    const page = await call<{ results: Entry[] }>(
      server,
      'GET',
      `/api/organization/audit-log/?page_size=100${query}`,
      { token },
    );
    assert.equal(page.status, 200, page.text);
    return page.body.results;
  }

  test('every listed action leaves an entry with its actor and address', async () => {
    const ua = { 'user-agent': 'AuditTest/1.0' };
    const as = (body?: unknown) => ({ token: owner.token, body, headers: ua });
    // Logins: a failure, then a success.
    await call(server, 'POST', '/api/auth/login/', {
      body: { email: owner.email, password: 'wrong password' },
      headers: ua,
    });
    await call(server, 'POST', '/api/auth/login/', {
      body: { email: owner.email, password: owner.password },
      headers: ua,
    });
    // Organization, keys (and their first use from an address), webhooks.
    await call(server, 'PATCH', '/api/organization/', as({ website: 'https://acme.test' }));
    const key = await createTestKey(server, owner);
    for (let i = 0; i < 3; i++)
      await call(server, 'GET', '/api/transactions/TX0000000000000000/', { apiKey: key });
    const rotated = await call<{ raw_key: string; id: number }>(
      server,
      'POST',
      '/api/organization/api-keys/rotate/',
      as({}),
    );
    await call(server, 'POST', `/api/organization/api-keys/${rotated.body.id}/revoke/`, as());
    await call(server, 'PUT', '/api/organization/webhook/', as({ endpoint_url: 'https://example.com/hook' }));
    await call(server, 'POST', '/api/organization/webhook/rotate/', as());
    // Catalog and links.
    const product = await call<{ id: string }>(
      server,
      'POST',
      '/api/products/',
      as({ name: 'Mug', unit_price: '9.00' }),
    );
    await call(server, 'PATCH', `/api/products/${product.body.id}/`, as({ name: 'Big mug' }));
    const link = await call<{ id: string }>(
      server,
      'POST',
      '/api/payment-links/',
      as({ name: 'Mugs', products: [{ product_id: product.body.id, quantity: 1 }] }),
    );
    await call(server, 'PATCH', `/api/payment-links/${link.body.id}/`, as({ name: 'All mugs' }));
    await call(server, 'DELETE', `/api/payment-links/${link.body.id}/`, as());
    await call(server, 'DELETE', `/api/products/${product.body.id}/`, as());
    // Money: a refund through the API, a payout requested and completed by the operator.
    const payment = await createPaidPayment(server.ctx, {
      organizationId: owner.organizationId,
      gross: 10_000n,
    });
    const liveKey = await createTestKey(server, owner);
    const refund = await call(server, 'POST', `/api/transactions/${payment.id}/refund/`, {
      apiKey: liveKey,
      body: { reason: 'Broken mug', amount: '10.00' },
    });
    assert.equal(refund.status, 200, refund.text);
    const payout = await call<{ id: string }>(server, 'POST', '/api/payouts/', as({ amount: '5.00' }));
    assert.equal(payout.status, 201, payout.text);
    await settlePayout(server.ctx, payout.body.id, 'completed');
    // Team.
    const member = await addMember(server, owner, 'viewer');
    await call(server, 'PATCH', `/api/organization/members/${member.id}/`, as({ role: 'support' }));
    await call(server, 'DELETE', `/api/organization/members/${member.id}/`, as());
    const invitation = await call<{ id: number }>(
      server,
      'POST',
      '/api/organization/members/',
      as({ email: 'x@y.test', role: 'viewer' }),
    );
    await call(server, 'DELETE', `/api/organization/invitations/${invitation.body.id}/`, as());
    // The account: two-factor on and off, identity confirmed, password changed, a session revoked, a reset.
    const { secret } = await enableTwoFactor(server, owner.token);
    now += 30_000;
    await call(server, 'POST', '/api/auth/confirm/', as({ code: totpCode(secret, new Date(now)) }));
    now += 30_000;
    await call(server, 'POST', '/api/auth/2fa/disable/', as({ code: totpCode(secret, new Date(now)) }));
    await call(
      server,
      'POST',
      '/api/auth/password/',
      as({ current_password: owner.password, new_password: 'new password 123' }),
    );
    owner.password = 'new password 123';
    const second = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
      body: { email: owner.email, password: owner.password },
    });
    const sessions = await call<{ id: number; current: boolean }[]>(server, 'GET', '/api/auth/sessions/', {
      token: second.body.token,
    });
    const current = sessions.body.find((s) => s.current);
    await call(server, 'DELETE', `/api/auth/sessions/${current?.id}/`, { token: owner.token });
    await call(server, 'POST', '/api/auth/password-reset/', { body: { email: owner.email } });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await call(server, 'POST', '/api/auth/password-reset/confirm/', {
      body: { token: mailedToken(server, owner.email, 'reset-password'), new_password: 'reset password 12' },
    });
    owner.password = 'reset password 12';
    owner.token = (
      await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
        body: { email: owner.email, password: owner.password },
      })
    ).body.token;
    // A logout ends a session, like revoking it from the list.
    const leaving = await call<{ token: string }>(server, 'POST', '/api/auth/login/', {
      body: { email: owner.email, password: owner.password },
    });
    const out = await call(server, 'POST', '/api/auth/logout/', { token: leaving.body.token, headers: ua });
    assert.equal(out.status, 204);

    const log = await entries();
    const actions = new Set(log.map((e) => e.action));
    for (const action of [
      'merchant.created',
      'login.failed',
      'login.succeeded',
      'organization.updated',
      'api_key.created',
      'api_key.used_from_new_address',
      'api_key.rotated',
      'api_key.revoked',
      'webhook.endpoint_changed',
      'webhook.secret_rotated',
      'product.created',
      'product.updated',
      'product.deleted',
      'payment_link.created',
      'payment_link.updated',
      'payment_link.deleted',
      'refund.created',
      'payout.requested',
      'payout.completed',
      'member.invited',
      'member.joined',
      'member.role_changed',
      'member.removed',
      'invitation.revoked',
      'two_factor.setup_started',
      'two_factor.enabled',
      'identity.confirmed',
      'two_factor.disabled',
      'password.changed',
      'session.revoked',
      'session.logged_out',
      'password.reset_requested',
      'password.reset',
    ]) {
      assert.ok(actions.has(action), `no ${action} entry; have ${[...actions].join(', ')}`);
    }
    const byAction = (action: string) => log.filter((e) => e.action === action);
    const [created] = byAction('merchant.created');
    assert.deepEqual(created.actor, { type: 'operator', id: null, email: null });
    const [failed] = byAction('login.failed');
    assert.equal(failed.actor.email, owner.email);
    assert.equal(failed.ip, '127.0.0.1');
    assert.equal(failed.user_agent, 'AuditTest/1.0');
    const [changed] = byAction('organization.updated');
    assert.deepEqual(changed.actor.type, 'user');
    assert.equal(changed.actor.email, owner.email);
    assert.equal(changed.ip, '127.0.0.1');
    assert.deepEqual(changed.details, { changes: { website: 'https://acme.test' } });
    const keyUse = byAction('api_key.used_from_new_address');
    assert.equal(
      keyUse.filter((e) => e.target?.id === String(keyUse[0].actor.id)).length,
      1,
      'one entry per address, not per request',
    );
    assert.equal(keyUse[0].actor.type, 'api_key');
    assert.equal(keyUse[0].ip, '127.0.0.1');
    const [refunded] = byAction('refund.created');
    assert.equal(refunded.actor.type, 'api_key');
    assert.equal(refunded.details.amount, '10.00');
    assert.equal(byAction('payout.completed')[0].actor.type, 'operator');
    assert.equal(byAction('payout.requested')[0].actor.email, owner.email);
    assert.equal(byAction('member.joined')[0].actor.email, member.email);
    const [loggedOut] = byAction('session.logged_out');
    assert.equal(loggedOut.actor.email, owner.email);
    assert.equal(loggedOut.user_agent, 'AuditTest/1.0');
    assert.equal(loggedOut.target?.type, 'session');
    const [setup] = byAction('two_factor.setup_started');
    assert.deepEqual(
      [setup.actor.email, setup.target],
      [owner.email, { type: 'user', id: String(setup.actor.id) }],
    );
    // Newest first.
    const times = log.map((e) => e.at);
    assert.deepEqual([...times].sort().reverse(), times);
  });

  test('filters by actor, action (exact or prefix) and time; CSV export of the same selection', async () => {
    const byOwner = await entries(`&actor=${encodeURIComponent(owner.email)}`);
    assert.ok(byOwner.length > 0 && byOwner.every((e) => e.actor.email === owner.email));
    const byOperator = await entries('&actor=operator');
    assert.ok(byOperator.length > 0 && byOperator.every((e) => e.actor.type === 'operator'));
    const keys = await entries('&action=api_key');
    assert.ok(keys.length >= 3 && keys.every((e) => e.action.startsWith('api_key.')));
    const exact = await entries('&action=api_key.rotated');
    assert.ok(exact.length >= 1 && exact.every((e) => e.action === 'api_key.rotated'));
    const all = await entries();
    const middle = all[Math.floor(all.length / 2)].at;
    const before = await entries(`&created_before=${encodeURIComponent(middle)}`);
    const afterwards = await entries(`&created_after=${encodeURIComponent(middle)}`);
    assert.ok(before.every((e) => e.at < middle) && afterwards.every((e) => e.at >= middle));
    assert.equal(before.length + afterwards.length, all.length);
    const bad = await call(server, 'GET', '/api/organization/audit-log/?actor=nobody', {
      token: owner.token,
    });
    assert.equal(bad.status, 400);

    const response = await fetch(`${server.url}/api/organization/audit-log/?format=csv&action=api_key`, {
      headers: { authorization: `Token ${owner.token}` },
    });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/csv/);
    assert.match(response.headers.get('content-disposition') ?? '', /attachment; filename="audit-log.csv"/);
    const lines = (await response.text()).trim().split('\r\n');
    assert.equal(
      lines[0],
      'id,at,actor_type,actor_id,actor_email,action,target_type,target_id,ip,user_agent,details',
    );
    assert.equal(lines.length - 1, keys.length);
    assert.ok(lines.slice(1).every((line) => line.includes(',api_key.')));
  });

  /** Makes every insert into `table` fail (a trigger), or stops doing so. */
  async function fail(table: string, statement: 'create' | 'drop') {
    const name = `audit_test_fail_${table}`;
    if (DB_KIND === 'postgres') {
      if (statement === 'create') {
        await sql
          .raw(
            `CREATE OR REPLACE FUNCTION ${name}() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'injected failure'; END $$ LANGUAGE plpgsql`,
          )
          .execute(server.ctx.db);
        await sql
          .raw(`CREATE TRIGGER ${name} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`)
          .execute(server.ctx.db);
      } else await sql.raw(`DROP TRIGGER ${name} ON ${table}`).execute(server.ctx.db);
    } else if (statement === 'create') {
      await sql
        .raw(
          `CREATE TRIGGER ${name} BEFORE INSERT ON ${table} BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
        )
        .execute(server.ctx.db);
    } else await sql.raw(`DROP TRIGGER ${name}`).execute(server.ctx.db);
  }

  test('a change that rolls back leaves no entry, and an entry that cannot be written rolls the change back', async () => {
    const count = async (action: string) => (await entries(`&action=${action}`)).length;

    // The payout's ledger movement is written after its audit entry: it fails, and the entry goes with it.
    const payoutsBefore = await count('payout.requested');
    await fail('wallet_movements', 'create');
    try {
      const refused = await call(server, 'POST', '/api/payouts/', {
        token: owner.token,
        body: { amount: '1.00' },
      });
      assert.equal(refused.status, 500);
    } finally {
      await fail('wallet_movements', 'drop');
    }
    assert.equal(await count('payout.requested'), payoutsBefore, 'no entry for a payout that rolled back');
    const payouts = await call<{ count: number }>(server, 'GET', '/api/payouts/', { token: owner.token });
    assert.equal(payouts.body.count, 1, 'only the earlier payout');

    // The audit entry itself fails: the product is not created either.
    const productsBefore = (await call<unknown[]>(server, 'GET', '/api/products/', { token: owner.token }))
      .body.length;
    await fail('audit_log', 'create');
    try {
      const refused = await call(server, 'POST', '/api/products/', {
        token: owner.token,
        body: { name: 'Ghost', unit_price: '1.00' },
      });
      assert.equal(refused.status, 500);
    } finally {
      await fail('audit_log', 'drop');
    }
    const products = await call<unknown[]>(server, 'GET', '/api/products/', { token: owner.token });
    assert.equal(products.body.length, productsBefore, 'no product without its audit entry');
  });

  /** A merchant of its own with a webhook endpoint (nothing listens there: deliveries fail and retry). */
  async function merchantWithEndpoint(name: string): Promise<Merchant> {
    const merchant = await createTestMerchant(server, name);
    const endpoint = await call(server, 'PUT', '/api/organization/webhook/', {
      token: merchant.token,
      body: { endpoint_url: 'http://127.0.0.1:9/hook' },
    });
    assert.equal(endpoint.status, 200, endpoint.text);
    return merchant;
  }

  test("a webhook test, a payment's event sent again, a redelivery and a refund verification code are audited", async () => {
    const shop = await merchantWithEndpoint('Webhook Audit');
    const as = (body?: unknown) => ({ token: shop.token, body, headers: { 'user-agent': 'AuditTest/2.0' } });
    const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', as());
    assert.equal(sent.status, 202, sent.text);
    const payment = await createPaidPayment(server.ctx, {
      organizationId: shop.organizationId,
      gross: 5_000n,
    });
    const resent = await call<{ delivery_id: string }>(
      server,
      'POST',
      '/api/organization/webhook/test-transaction/',
      as({ transaction_id: payment.public_id }),
    );
    assert.equal(resent.status, 202, resent.text);
    const again = await call<{ id: string }>(
      server,
      'POST',
      `/api/organization/webhook/deliveries/${sent.body.delivery_id}/redeliver/`,
      as(),
    );
    assert.equal(again.status, 201, again.text);
    const code = await call(server, 'POST', '/api/refunds/verification-code/', as());
    assert.equal(code.status, 202, code.text);

    const log = await entries('', shop.token);
    const only = (action: string) => {
      const found = log.filter((e) => e.action === action);
      assert.equal(found.length, 1, `one ${action} entry; have ${log.map((e) => e.action).join(', ')}`);
      assert.equal(found[0].actor.email, shop.email, action);
      assert.equal(found[0].user_agent, 'AuditTest/2.0', action);
      return found[0];
    };
    const test = only('webhook.test_sent');
    assert.deepEqual(test.target, { type: 'webhook_delivery', id: sent.body.delivery_id });
    assert.equal(test.details.event, 'webhook.test');
    const transaction = only('webhook.test_transaction_sent');
    assert.deepEqual(transaction.target, { type: 'webhook_delivery', id: resent.body.delivery_id });
    assert.equal(transaction.details.transaction_id, payment.public_id);
    assert.equal(transaction.details.event, 'transaction.status_changed');
    const redelivered = only('webhook.redelivered');
    assert.deepEqual(redelivered.target, { type: 'webhook_delivery', id: again.body.id });
    assert.equal(redelivered.details.redelivery_of, sent.body.delivery_id);
    const requested = only('refund.verification_code_sent');
    assert.deepEqual(requested.target, { type: 'user', id: String(requested.actor.id) });
    assert.equal(typeof requested.details.expires_at, 'string');
    assert.equal(JSON.stringify(requested.details).match(/\b\d{6}\b/), null, 'never the code itself');
  });

  test('an entry that cannot be written undoes them, and a test clock advance and an update-card page too', async () => {
    const shop = await merchantWithEndpoint('Rollback Audit');
    const db = server.ctx.db;
    const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
      token: shop.token,
    });
    assert.equal(sent.status, 202, sent.text);
    const payment = await createPaidPayment(server.ctx, {
      organizationId: shop.organizationId,
      gross: 5_000n,
    });
    const plan = await call<{ id: string }>(server, 'POST', '/api/subscriptions/plans/', {
      token: shop.token,
      body: { name: 'Clocked', amount: '5.00', interval: 'month', environment: 'sandbox' },
    });
    assert.equal(plan.status, 201, plan.text);
    const subscription = await insertSubscription(server, {
      organizationId: shop.organizationId,
      planPublicId: plan.body.id,
      status: 'active',
    });
    const count = async (table: 'webhook_deliveries' | 'refund_verification_codes' | 'checkout_sessions') =>
      Number(
        (
          await db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll<number | string>().as('count'))
            .where('organization_id', '=', shop.organizationId)
            .executeTakeFirstOrThrow()
        ).count,
      );
    const counts = async () => ({
      deliveries: await count('webhook_deliveries'),
      codes: await count('refund_verification_codes'),
      checkouts: await count('checkout_sessions'),
    });
    const clockOf = async () =>
      (
        await call<{ test_clock_at: string | null }>(
          server,
          'GET',
          `/api/subscriptions/${subscription.publicId}/`,
          { token: shop.token },
        )
      ).body.test_clock_at;
    const actions: [string, unknown][] = [
      ['/api/organization/webhook/test/', undefined],
      ['/api/organization/webhook/test-transaction/', { transaction_id: payment.public_id }],
      [`/api/organization/webhook/deliveries/${sent.body.delivery_id}/redeliver/`, undefined],
      ['/api/refunds/verification-code/', undefined],
      [`/api/subscriptions/${subscription.publicId}/advance-clock/`, { days: 3 }],
      [`/api/subscriptions/${subscription.publicId}/update-card-link/`, undefined],
    ];
    const before = await counts();
    const entriesBefore = (await entries('', shop.token)).length;
    await fail('audit_log', 'create');
    try {
      for (const [path, body] of actions) {
        const refused = await call(server, 'POST', path, { token: shop.token, body });
        assert.equal(refused.status, 500, `${path}: ${refused.text}`);
      }
    } finally {
      await fail('audit_log', 'drop');
    }
    assert.equal(await clockOf(), null, 'the test clock did not move');
    assert.deepEqual(await counts(), before, 'no delivery, code or update-card page without its entry');
    assert.equal((await entries('', shop.token)).length, entriesBefore);

    // The same actions with the log working: each is done and audited once.
    for (const [path, body] of actions) {
      const done = await call(server, 'POST', path, { token: shop.token, body });
      assert.ok(done.status < 300, `${path}: ${done.text}`);
    }
    assert.ok((await clockOf()) !== null, 'the test clock moved');
    const log = await entries('', shop.token);
    for (const action of [
      'webhook.test_sent',
      'webhook.test_transaction_sent',
      'webhook.redelivered',
      'refund.verification_code_sent',
      'subscription.clock_advanced',
      'subscription.update_card_link_created',
    ]) {
      const expected = action === 'webhook.test_sent' ? 2 : 1;
      assert.equal(log.filter((e) => e.action === action).length, expected, action);
    }
  });

  test('retention keeps entries 400 days, whatever KASSA_RETENTION_DAYS says, and deletes them after', async () => {
    const at = (days: number) => new Date(now - days * DAY).toISOString();
    for (const [days, action] of [
      [30, 'test.thirty_days'],
      [399, 'test.kept'],
      [401, 'test.expired'],
    ] as const) {
      await server.ctx.db
        .insertInto('audit_log')
        .values({ organization_id: owner.organizationId, at: at(days), actor_type: 'system', action })
        .execute();
    }
    while ((await pruneExpiredRecords(server.ctx)) > 0) {
      // batches
    }
    const left = new Set((await entries('&action=test')).map((e) => e.action));
    assert.deepEqual([...left].sort(), ['test.kept', 'test.thirty_days']);
  });
});
