// Webhook secret rotation. A bare rotation does what the interface says: only the new secret verifies,
// in both signature headers. A rotation asked for an overlap (previous_secret_expires_in, seconds, up to
// 7 days) keeps the replaced secret, sealed like the current one, and until it expires every delivery's
// Standard Webhooks webhook-signature lists a `v1,` entry for each secret, so a receiver that has not
// deployed the new secret yet still verifies; X-Webhook-Signature stays the new secret's alone. After the
// overlap the previous secret signs nothing and the retention loop drops it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook } from '../sdk/src/index.ts';
import { pruneExpiredRecords } from '../src/modules/retention/prune.ts';
import { openSecret } from '../src/modules/webhooks/secret.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from './helpers/server.ts';
import {
  header,
  hmac,
  type ReceivedRequest,
  type Receiver,
  setEndpoint,
  standardHeaders,
  startReceiver,
} from './webhooks-helpers.ts';

interface Rotated {
  raw_secret: string;
  secret_preview: string;
  previous_secret_expires_at: string | null;
}

/** Whether a receiver holding `secret` accepts the delivery, with each library a receiver may use. */
function verifies(
  secret: string,
  request: ReceivedRequest,
): { standard: boolean; sdk: boolean; body: boolean } {
  const attempt = (verify: () => unknown) => {
    try {
      verify();
      return true;
    } catch {
      return false;
    }
  };
  return {
    standard: attempt(() => new Webhook(secret).verify(request.text, standardHeaders(request))),
    sdk: attempt(() => verifyWebhook(request.body, request.headers, secret)),
    body: header(request, 'x-webhook-signature') === hmac(secret, request.body),
  };
}

const ALL = { standard: true, sdk: true, body: true };
const NONE = { standard: false, sdk: false, body: false };
const STANDARD_ONLY = { standard: true, sdk: true, body: false };

describe('webhook secret rotation', () => {
  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    server = await startTestServer();
    receiver = await startReceiver();
  });
  after(async () => {
    await server.close();
    await receiver.close();
  });

  async function merchantWithEndpoint(): Promise<{ merchant: Merchant; secret: string; path: string }> {
    const merchant = await createTestMerchant(server);
    const path = `/hooks/${merchant.slug}`;
    const secret = (await setEndpoint(server, merchant, `${receiver.url}${path}`)) as string;
    return { merchant, secret, path };
  }

  function rotate(merchant: Merchant, body?: unknown) {
    return call<Rotated>(server, 'POST', '/api/organization/webhook/rotate/', {
      token: merchant.token,
      body,
    });
  }

  /** Sends webhook.test and returns the request the receiver got for it. */
  async function delivered(merchant: Merchant, path: string): Promise<ReceivedRequest> {
    const before = receiver.requests.filter((request) => request.path === path).length;
    const sent = await call(server, 'POST', '/api/organization/webhook/test/', { token: merchant.token });
    assert.equal(sent.status, 202, sent.text);
    const requests = await receiver.waitFor(before + 1, 10_000, (request) => request.path === path);
    return requests[before];
  }

  function storedEndpoint(merchant: Merchant) {
    return server.ctx.db
      .selectFrom('webhook_endpoints')
      .select(['secret_encrypted', 'previous_secret_encrypted', 'previous_secret_expires_at'])
      .where('organization_id', '=', merchant.organizationId)
      .executeTakeFirstOrThrow();
  }

  test('a bare rotation: only the new secret verifies, in both headers, and no previous secret is kept', async () => {
    const { merchant, secret: old, path } = await merchantWithEndpoint();
    const rotated = await rotate(merchant);
    assert.equal(rotated.status, 200, rotated.text);
    assert.equal(rotated.body.previous_secret_expires_at, null);
    const request = await delivered(merchant, path);
    assert.equal(header(request, 'webhook-signature').split(' ').length, 1);
    assert.deepEqual(verifies(rotated.body.raw_secret, request), ALL);
    assert.deepEqual(verifies(old, request), NONE);
    const stored = await storedEndpoint(merchant);
    assert.equal(stored.previous_secret_encrypted, null);
    assert.equal(stored.previous_secret_expires_at, null);
  });

  test('with an overlap, webhook-signature carries both secrets until it ends; X-Webhook-Signature only the new', async () => {
    const { merchant, secret: old, path } = await merchantWithEndpoint();
    const asked = Date.now();
    const rotated = await rotate(merchant, { previous_secret_expires_in: 86_400 });
    assert.equal(rotated.status, 200, rotated.text);
    const fresh = rotated.body.raw_secret;
    assert.notEqual(fresh, old);
    assert.equal(rotated.body.secret_preview, `whsec_…${fresh.slice(-4)}`);
    const expiresAt = Date.parse(rotated.body.previous_secret_expires_at ?? '');
    assert.ok(
      Math.abs(expiresAt - (asked + 86_400_000)) < 5_000,
      rotated.body.previous_secret_expires_at ?? '',
    );
    const shown = await call<Rotated>(server, 'GET', '/api/organization/webhook/', { token: merchant.token });
    assert.equal(shown.body.previous_secret_expires_at, rotated.body.previous_secret_expires_at);

    const request = await delivered(merchant, path);
    const entries = header(request, 'webhook-signature').split(' ');
    assert.equal(entries.length, 2);
    for (const entry of entries) assert.match(entry, /^v1,[A-Za-z0-9+/]{43}=$/);
    // The receiver that deployed the new secret verifies either way; the one still on the old secret
    // verifies the Standard Webhooks signature (the interface's body-only one is the new secret's alone).
    assert.deepEqual(verifies(fresh, request), ALL);
    assert.deepEqual(verifies(old, request), STANDARD_ONLY);
    assert.deepEqual(verifies('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', request), NONE);

    // The previous secret is stored sealed like the current one, never in clear.
    const stored = await storedEndpoint(merchant);
    assert.ok(stored.previous_secret_encrypted);
    assert.equal(stored.previous_secret_encrypted.includes(old.slice(6, 20)), false);
    assert.equal(openSecret(stored.previous_secret_encrypted, server.ctx.config.secretKey), old);
    assert.equal(openSecret(stored.secret_encrypted, server.ctx.config.secretKey), fresh);

    const audit = await call<{ results: { action: string; details: Record<string, unknown> }[] }>(
      server,
      'GET',
      '/api/organization/audit-log/?action=webhook.secret_rotated',
      { token: merchant.token },
    );
    assert.equal(
      audit.body.results[0]?.details.previous_secret_expires_at,
      rotated.body.previous_secret_expires_at,
    );

    // Rotating again without an overlap drops both older secrets at once.
    const again = await rotate(merchant, {});
    assert.equal(again.status, 200, again.text);
    assert.equal(again.body.previous_secret_expires_at, null);
    const after = await delivered(merchant, path);
    assert.equal(header(after, 'webhook-signature').split(' ').length, 1);
    assert.deepEqual(verifies(again.body.raw_secret, after), ALL);
    assert.deepEqual(verifies(fresh, after), NONE);
    assert.deepEqual(verifies(old, after), NONE);
  });

  test('after the overlap the previous secret signs nothing, and the retention loop drops it', async () => {
    const { merchant, secret: old, path } = await merchantWithEndpoint();
    const rotated = await rotate(merchant, { previous_secret_expires_in: 1 });
    assert.equal(rotated.status, 200, rotated.text);
    const during = await delivered(merchant, path);
    assert.deepEqual(verifies(old, during), STANDARD_ONLY);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const shown = await call<Rotated>(server, 'GET', '/api/organization/webhook/', { token: merchant.token });
    assert.equal(shown.body.previous_secret_expires_at, null);
    const later = await delivered(merchant, path);
    assert.equal(header(later, 'webhook-signature').split(' ').length, 1);
    assert.deepEqual(verifies(rotated.body.raw_secret, later), ALL);
    assert.deepEqual(verifies(old, later), NONE);
    // The loop runs every minute; one pass of it here.
    assert.ok((await storedEndpoint(merchant)).previous_secret_encrypted);
    await pruneExpiredRecords(server.ctx);
    const stored = await storedEndpoint(merchant);
    assert.equal(stored.previous_secret_encrypted, null);
    assert.equal(stored.previous_secret_expires_at, null);
  });

  test("two rotations at once: the later keeps the earlier one's new secret as its previous one", async () => {
    const { merchant, secret: old } = await merchantWithEndpoint();
    const [a, b] = await Promise.all([
      rotate(merchant, { previous_secret_expires_in: 3600 }),
      rotate(merchant, { previous_secret_expires_in: 3600 }),
    ]);
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    const stored = await storedEndpoint(merchant);
    const key = server.ctx.config.secretKey;
    const kept = [
      openSecret(stored.secret_encrypted, key),
      openSecret(stored.previous_secret_encrypted ?? '', key),
    ].sort();
    // Not the first secret: both rotations read it, and a previous secret taken from that read would
    // leave one of the two secrets handed out verifying nothing.
    assert.deepEqual(kept, [a.body.raw_secret, b.body.raw_secret].sort());
    assert.equal(kept.includes(old), false);
  });

  test('an overlap outside 0 to 7 days, or not a whole number of seconds, is a 400 and changes nothing', async () => {
    const { merchant } = await merchantWithEndpoint();
    const before = await storedEndpoint(merchant);
    const cases: [unknown, string][] = [
      [-1, 'previous_secret_expires_in: must be >= 0.'],
      [604_801, 'previous_secret_expires_in: must be <= 604800.'],
      [1.5, 'previous_secret_expires_in: must be of type integer.'],
      ['3600', 'previous_secret_expires_in: must be of type integer.'],
    ];
    for (const [value, detail] of cases) {
      const response = await call<{ detail: string }>(server, 'POST', '/api/organization/webhook/rotate/', {
        token: merchant.token,
        body: { previous_secret_expires_in: value },
      });
      assert.equal(response.status, 400, String(value));
      assert.equal(response.body.detail, detail);
    }
    assert.deepEqual(await storedEndpoint(merchant), before);
    const longest = await rotate(merchant, { previous_secret_expires_in: 604_800 });
    assert.equal(longest.status, 200, longest.text);
    assert.ok(longest.body.previous_secret_expires_at);
  });
});
