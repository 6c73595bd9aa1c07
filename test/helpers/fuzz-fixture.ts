// One organization with something of everything, for the fuzz and security tests: a session, a
// production key (all scopes), a sandbox key, a revoked key, products, payment links, checkouts,
// paid payments with a refund in both environments, a webhook endpoint with a delivery, a payout.

import assert from 'node:assert/strict';
import { randomBase62, sha256Hex } from '../../src/lib/ids.ts';
import { createKey } from '../../src/modules/api-keys/service.ts';
import type { Environment } from '../../src/modules/api-keys/table.ts';
import { OPERATOR } from '../../src/modules/audit/record.ts';
import { authenticateSession, login } from '../../src/modules/auth/service.ts';
import { createMerchant } from '../../src/modules/organizations/service.ts';
import { jsonCall } from './fuzz.ts';
import type { TestServer } from './server.ts';
import { insertSubscription } from './subscriptions.ts';
import { createPaidPayment } from './wallet-fixtures.ts';

/** The kinds of identifier a request can name. */
export type RefKind =
  | 'payment'
  | 'sandboxPayment'
  | 'refund'
  | 'sandboxRefund'
  | 'product'
  | 'link'
  | 'apiKey'
  | 'delivery'
  | 'checkout'
  | 'sandboxCheckout'
  | 'checkoutToken'
  | 'payout'
  | 'slug'
  | 'member'
  | 'invitation'
  | 'session'
  | 'plan'
  | 'subscription';

export const REF_KINDS: RefKind[] = [
  'payment',
  'sandboxPayment',
  'refund',
  'sandboxRefund',
  'product',
  'link',
  'apiKey',
  'delivery',
  'checkout',
  'sandboxCheckout',
  'checkoutToken',
  'payout',
  'slug',
  'member',
  'invitation',
  'plan',
  'subscription',
  'session',
];

export interface OrgFixture {
  name: string;
  organizationId: number;
  slug: string;
  email: string;
  password: string;
  session: string;
  prodKey: string;
  sandboxKey: string;
  /** Keys that were revoked (by rotation or revocation): every one must get 401. */
  revokedKeys: string[];
  /** Every identifier of the organization, by kind, in each form a path accepts (public and numeric). */
  refs: Record<RefKind, string[]>;
  /** Secrets that must never appear in a log or a list response. */
  secrets: string[];
}

type Json = Record<string, unknown>;

async function ok<T = Json>(
  server: TestServer,
  method: string,
  path: string,
  options: { token?: string; apiKey?: string; body?: unknown },
  status = 200,
): Promise<T> {
  const response = await jsonCall<T>(server.url, method, path, options);
  assert.equal(response.status, status, `${method} ${path}: ${response.text}`);
  return response.body;
}

const BILLING = {
  billing_country: 'FR',
  billing_first_name: 'Ada',
  billing_last_name: 'Lovelace',
  billing_email: 'ada@example.test',
};

let merchants = 0;

/** A merchant as the operator creates it, logged in through the API. */
export async function createFixtureMerchant(server: TestServer, name: string) {
  merchants += 1;
  const email = `fixture${merchants}-${process.pid}@shop.test`;
  const password = `pw-${randomBase62(16)}`;
  const { organization } = await createMerchant(server.ctx, { organization: name, email, password });
  const login = await ok<{ token: string }>(server, 'POST', '/api/auth/login/', {
    body: { email, password },
  });
  return { organizationId: organization.id, slug: organization.slug, email, password, token: login.token };
}

export async function createOrgFixture(server: TestServer, name: string): Promise<OrgFixture> {
  const merchant = await createFixtureMerchant(server, name);
  const { db } = server.ctx;
  const session = { token: merchant.token };
  const newKey = async (environment: Environment) =>
    (
      await ok<{ raw_key: string }>(
        server,
        'POST',
        '/api/organization/api-keys/',
        { ...session, body: { name: 'fixture', allowed_scopes: '', environment } },
        201,
      )
    ).raw_key;
  const firstKey = await newKey('production');
  const rotated = await ok<{ raw_key: string }>(
    server,
    'POST',
    '/api/organization/api-keys/rotate/',
    session,
  );
  const prodKey = rotated.raw_key;
  const sandboxKey = await newKey('sandbox');
  const keys = await ok<{ id: number }[]>(server, 'GET', '/api/organization/api-keys/', session);

  const products = [
    await ok<{ id: string }>(
      server,
      'POST',
      '/api/products/',
      { ...session, body: { name: 'Widget', unit_price: '12.50' } },
      201,
    ),
    await ok<{ id: string }>(
      server,
      'POST',
      '/api/products/',
      { ...session, body: { name: 'Gadget', unit_price: '30.00', currency: 'EUR' } },
      201,
    ),
  ];
  const plan = await ok<{ id: string }>(
    server,
    'POST',
    '/api/subscriptions/plans/',
    { ...session, body: { name: 'Monthly', amount: '9.00', interval: 'month' } },
    201,
  );
  const subscription = await insertSubscription(server, {
    organizationId: merchant.organizationId,
    planPublicId: plan.id,
    status: 'active',
  });
  const links = [];
  for (let i = 0; i < 3; i += 1) {
    links.push(
      await ok<{ id: string }>(
        server,
        'POST',
        '/api/payment-links/',
        { ...session, body: { name: `Link ${i}`, products: [{ product_id: products[0].id, quantity: 1 }] } },
        201,
      ),
    );
  }
  await ok(server, 'DELETE', `/api/payment-links/${links[2].id}/`, session, 204);

  const checkouts: { checkout_id: string; token: string }[] = [];
  for (const [base, apiKey] of [
    ['/api', prodKey],
    ['/api', prodKey],
    ['/api', prodKey],
    ['/sandbox/api', sandboxKey],
  ] as const) {
    checkouts.push(
      await ok(
        server,
        'POST',
        `${base}/checkout/create/`,
        { apiKey, body: { ...BILLING, products: [{ id: products[0].id, quantity: 2 }] } },
        201,
      ),
    );
  }
  // One payment through the hosted step; the others made paid and settled directly.
  const hosted = await ok<{ transaction_id: string }>(
    server,
    'POST',
    `/api/checkout/${checkouts[0].token}/pay/`,
    {
      body: {
        card_number: '4242 4242 4242 4242',
        exp_month: 12,
        exp_year: 2099,
        cvc: '123',
        cardholder_name: 'Ada',
      },
    },
  );
  const paid = [];
  for (const environment of ['production', 'production', 'sandbox', 'production', 'sandbox'] as const) {
    paid.push(
      await createPaidPayment(server.ctx, {
        organizationId: merchant.organizationId,
        environment,
        gross: 10_000n,
      }),
    );
  }
  const refund = await ok<{ refund_id: number; refund_public_id: string }>(
    server,
    'POST',
    `/api/transactions/${paid[0].public_id}/refund/`,
    { apiKey: prodKey, body: { reason: 'fixture', amount: '10.00' } },
  );
  // A second refund and a second payout, so lists of one per page have a next page.
  await ok(server, 'POST', `/api/transactions/${paid[1].public_id}/refund/`, {
    apiKey: prodKey,
    body: { reason: 'second fixture', amount: '2.00' },
  });
  const sandboxRefund = await ok<{ refund_id: number; refund_public_id: string }>(
    server,
    'POST',
    `/sandbox/api/transactions/${paid[2].public_id}/refund/`,
    { apiKey: sandboxKey, body: { reason: 'fixture', amount: '5.00' } },
  );
  const endpoint = await ok<{ raw_secret: string }>(server, 'PUT', '/api/organization/webhook/', {
    ...session,
    body: { endpoint_url: 'http://127.0.0.1:9/hooks' },
  });
  await ok(server, 'POST', '/api/organization/webhook/test/', session, 202);
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select(['id', 'delivery_id'])
    .where('organization_id', '=', merchant.organizationId)
    .execute();
  const payout = await ok<{ id: string }>(
    server,
    'POST',
    '/api/payouts/',
    { ...session, body: { amount: '1.00' } },
    201,
  );
  await ok(server, 'POST', '/api/payouts/', { ...session, body: { amount: '2.00' } }, 201);
  const payoutRows = await db
    .selectFrom('payouts')
    .select('id')
    .where('organization_id', '=', merchant.organizationId)
    .execute();

  // Team and account ids: the owner (a member), a pending invitation, the fixture's session.
  const invitation = await ok<{ id: number }>(
    server,
    'POST',
    '/api/organization/members/',
    { ...session, body: { email: `invited-${merchant.organizationId}@fuzz.test`, role: 'viewer' } },
    201,
  );
  const team = await ok<{ members: { id: number }[] }>(server, 'GET', '/api/organization/members/', session);
  const sessions = await ok<{ id: number }[]>(server, 'GET', '/api/auth/sessions/', session);

  const payments = await db
    .selectFrom('payments')
    .select(['id', 'public_id', 'environment'])
    .where('organization_id', '=', merchant.organizationId)
    .execute();
  const inEnvironment = (environment: Environment) =>
    payments.filter((p) => p.environment === environment).flatMap((p) => [p.public_id, String(p.id)]);
  assert.ok(payments.some((p) => p.public_id === hosted.transaction_id));

  return {
    name,
    organizationId: merchant.organizationId,
    slug: merchant.slug,
    email: merchant.email,
    password: merchant.password,
    session: merchant.token,
    prodKey,
    sandboxKey,
    revokedKeys: [firstKey],
    refs: {
      payment: inEnvironment('production'),
      sandboxPayment: inEnvironment('sandbox'),
      refund: [`RF${refund.refund_public_id}`, String(refund.refund_id)],
      sandboxRefund: [`RF${sandboxRefund.refund_public_id}`, String(sandboxRefund.refund_id)],
      product: products.map((p) => p.id),
      link: links.map((l) => l.id),
      apiKey: keys.map((k) => String(k.id)),
      delivery: deliveries.flatMap((d) => [d.delivery_id, String(d.id)]),
      checkout: checkouts.slice(0, 3).map((c) => c.checkout_id),
      sandboxCheckout: checkouts.slice(3).map((c) => c.checkout_id),
      checkoutToken: checkouts.map((c) => c.token),
      payout: [payout.id, ...payoutRows.map((p) => String(p.id))],
      slug: [merchant.slug],
      member: team.members.map((m) => String(m.id)),
      invitation: [String(invitation.id)],
      session: sessions.map((s) => String(s.id)),
      plan: [plan.id],
      subscription: [subscription.publicId],
    },
    secrets: [merchant.password, merchant.token, firstKey, prodKey, sandboxKey, endpoint.raw_secret],
  };
}

/**
 * After a request that may have changed credentials (logout, key rotation or revocation), make sure the
 * fixture again holds a live session and an active all-scope key per environment.
 */
export async function restoreCredentials(server: TestServer, fixture: OrgFixture): Promise<void> {
  const { ctx } = server;
  if (!(await authenticateSession(ctx, fixture.session))) {
    const session = await login(ctx, fixture.email, fixture.password);
    assert.ok(session, 'the fixture owner can log in again');
    fixture.session = session.token;
  }
  for (const environment of ['production', 'sandbox'] as const) {
    const field = environment === 'production' ? 'prodKey' : 'sandboxKey';
    const row = await ctx.db
      .selectFrom('api_keys')
      .select(['status', 'scopes'])
      .where('key_hash', '=', sha256Hex(fixture[field]))
      .executeTakeFirst();
    if (row?.status === 'active' && row.scopes === '') continue;
    // Revoke whatever is active in this environment (the fuzz may have made a narrower key) and issue anew.
    await ctx.db
      .updateTable('api_keys')
      .set({ status: 'revoked', revoked_at: ctx.clock().toISOString() })
      .where('organization_id', '=', fixture.organizationId)
      .where('environment', '=', environment)
      .where('status', '=', 'active')
      .execute();
    fixture.revokedKeys.push(fixture[field]);
    const issued = await createKey(
      ctx,
      fixture.organizationId,
      {
        name: 'fuzz',
        allowed_scopes: '',
        environment,
      },
      OPERATOR,
      null,
    );
    fixture[field] = issued.raw_key;
    fixture.refs.apiKey.push(String(issued.id));
  }
}
