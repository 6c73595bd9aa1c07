// #14 finding 3: anyone could start a merchant's link with failedUrl pointing at a phishing page, and the
// hosted page on the gateway's own domain sent the customer there. Redirects sent to the public start are
// now accepted only from the organization's redirect_origins; a link may carry its own URLs.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Json } from '../helpers/checkout.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { createLink, startLink } from './link-helpers.ts';

describe('security #3: redirect URLs of a public link start', () => {
  let server: TestServer;
  let merchant: Merchant;
  before(async () => {
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server, 'Redirect Shop');
  });
  after(() => server.close());

  const hostedUrls = async (token: unknown) =>
    (await call<Json>(server, 'GET', `/api/checkout/${token}/`)).body.urls as Json;
  const setOrigins = (origins: unknown) =>
    call<Json>(server, 'PATCH', '/api/organization/', {
      token: merchant.token,
      body: { redirect_origins: origins },
    });

  test('a redirect to an origin the merchant did not list is a 400 naming the field', async () => {
    const link = await createLink(server, merchant);
    for (const field of ['successUrl', 'failedUrl', 'cancelUrl']) {
      const response = await startLink(server, link.id, { [field]: 'https://phish.example/login' });
      assert.equal(response.status, 400, `${field}: ${response.text}`);
      assert.match(response.body.detail as string, new RegExp(`^${field}: `));
    }
  });

  test('redirect_origins is an editable list of https origins; listed origins are accepted', async () => {
    const organization = await call<Json>(server, 'GET', '/api/organization/', { token: merchant.token });
    assert.deepEqual(organization.body.redirect_origins, []);
    for (const bad of [
      ['http://shop.example'],
      ['https://shop.example/path'],
      ['https://shop.example?x=1'],
      ['not a url'],
      'https://shop.example',
    ]) {
      const refused = await setOrigins(bad);
      assert.equal(refused.status, 400, JSON.stringify(bad));
      assert.match(refused.body.detail as string, /^redirect_origins/);
    }
    const set = await setOrigins(['https://Shop.example', 'https://pay.shop.example:8443']);
    assert.equal(set.status, 200, set.text);
    assert.deepEqual(set.body.redirect_origins, ['https://shop.example', 'https://pay.shop.example:8443']);

    const link = await createLink(server, merchant);
    const started = await startLink(server, link.id, {
      successUrl: 'https://shop.example/thanks?order=1',
      failedUrl: 'https://pay.shop.example:8443/failed',
    });
    assert.equal(started.status, 201, started.text);
    const urls = await hostedUrls(started.body.token);
    assert.equal(urls.success_url, 'https://shop.example/thanks?order=1');
    assert.equal(urls.failed_url, 'https://pay.shop.example:8443/failed');
    // Same host on another port or scheme is another origin.
    for (const url of [
      'https://shop.example:444/x',
      'http://shop.example/x',
      'https://evil.shop.example/x',
    ]) {
      assert.equal((await startLink(server, link.id, { cancelUrl: url })).status, 400, url);
    }
  });

  test("a link's own URLs (set by the merchant, any http(s)) apply when the start sends none", async () => {
    const link = await createLink(server, merchant, {
      success_url: 'http://merchant.example/done',
      cancel_url: 'https://merchant.example/cancel',
      failed_url: 'https://merchant.example/failed',
    });
    assert.equal(link.success_url, 'http://merchant.example/done');
    const started = await startLink(server, link.id);
    assert.equal(started.status, 201, started.text);
    assert.deepEqual(await hostedUrls(started.body.token), {
      success_url: 'http://merchant.example/done',
      failed_url: 'https://merchant.example/failed',
      cancel_url: 'https://merchant.example/cancel',
    });
    const refused = await call<Json>(server, 'POST', '/api/payment-links/', {
      token: merchant.token,
      body: {
        name: 'bad',
        products: (link.products as Json[]).map((p) => ({ product_id: p.product_id })),
        success_url: 'javascript:alert(1)',
      },
    });
    assert.equal(refused.status, 400);
    assert.match(refused.body.detail as string, /^success_url: /);
  });
});
