// #14 finding 8: 20 anonymous starts exhausted a max_uses=3 link, and the link's internal name showed on
// its public page. A use is now a paid payment or an open reservation: a checkout canceled, expired or
// failed without a payment gives its use back. The name never leaves the dashboard.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CARDS, type Json, pay } from '../helpers/checkout.ts';
import {
  call,
  createTestMerchant,
  DB_KIND,
  type Merchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { createLink, linkRecord, startLink } from './link-helpers.ts';

describe(`security #8: payment-link uses and the public page (${DB_KIND})`, () => {
  let server: TestServer;
  let merchant: Merchant;
  let now = Date.now();
  before(async () => {
    server = await startTestServer({ worker: false, clock: () => new Date(now) });
    merchant = await createTestMerchant(server, 'Uses Shop');
  });
  after(() => server.close());

  test('20 anonymous starts of a max_uses=3 link reserve 3 uses; canceling one frees it', async () => {
    const link = await createLink(server, merchant, { max_uses: 3 });
    const starts = await Promise.all(Array.from({ length: 20 }, () => startLink(server, link.id)));
    const created = starts.filter((response) => response.status === 201);
    assert.equal(created.length, 3);
    assert.ok(starts.every((response) => response.status === 201 || response.status === 410));
    assert.equal((await linkRecord(server, merchant, link.id)).uses_count, 3);

    const canceled = await call(server, 'POST', `/api/checkout/${created[0].body.token}/cancel/`);
    assert.equal(canceled.status, 200, canceled.text);
    assert.equal((await linkRecord(server, merchant, link.id)).uses_count, 2);
    assert.equal((await linkRecord(server, merchant, link.id)).status, 'active');
    assert.equal((await startLink(server, link.id)).status, 201);
    assert.equal((await startLink(server, link.id)).status, 410);
  });

  test('a failed payment frees its use, a paid one keeps it', async () => {
    const link = await createLink(server, merchant, { max_uses: 2 });
    const first = await startLink(server, link.id);
    const second = await startLink(server, link.id);
    assert.equal((await startLink(server, link.id)).status, 410);
    const failed = await pay(server, first.body.token as string, CARDS.error);
    assert.equal(failed.body.payment_status, 'failed', failed.text);
    const paid = await pay(server, second.body.token as string, CARDS.success);
    assert.equal(paid.body.payment_status, 'paid', paid.text);
    const record = await linkRecord(server, merchant, link.id);
    assert.equal(record.uses_count, 1);
    assert.equal((record.stats as Json).payments_paid, 1);
    assert.equal((await startLink(server, link.id)).status, 201);
    assert.equal((await startLink(server, link.id)).status, 410);
  });

  test('checkouts started from a link expire after 30 minutes and then free their use', async () => {
    const link = await createLink(server, merchant, { max_uses: 1 });
    const started = await startLink(server, link.id);
    assert.equal(started.status, 201);
    assert.equal(started.body.expires_at, Math.floor(now / 1000) + 1800);
    assert.equal((await startLink(server, link.id)).status, 410);
    now += 1800 * 1000;
    assert.equal((await linkRecord(server, merchant, link.id)).uses_count, 0);
    assert.equal((await startLink(server, link.id)).status, 201);
  });

  test("the link's internal name never reaches the public preview or page", async () => {
    const link = await createLink(server, merchant);
    const preview = await call<Json>(server, 'GET', `/api/payment-links/public/${link.id}/`);
    assert.equal(preview.status, 200);
    assert.equal('name' in preview.body, false);
    assert.ok(!preview.text.includes('spring campaign'), preview.text);
    const page = await fetch(`${server.url}/pay/${link.id}`);
    assert.ok(!(await page.text()).includes('spring campaign'));
    assert.equal((await linkRecord(server, merchant, link.id)).name, 'Internal: spring campaign B');
  });
});
