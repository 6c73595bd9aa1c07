// Developers → Webhook in a real Chromium against the real server. An endpoint stored with credentials
// in its URL (as a row written before they were refused would be) is named as the reason nothing is
// delivered, with what to do; the page offers the URL without them, and saving it (from the keyboard)
// clears the problem. Rotating the secret offers an overlap: with 24 hours the page shows until when
// the previous secret still verifies (the instant GET gives), and a rotation with none ends it.
// Developers → Deliveries: a delivery whose event no longer exists cannot be redelivered (the API answers
// 409), so its Redeliver button is disabled and says why; a delivery with its event keeps it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { buildDashboard } from '../../scripts/build-web.ts';
import {
  call,
  createTestMerchant,
  type Merchant,
  startTestServer,
  type TestServer,
} from '../helpers/server.ts';
import { deleteEventUnderItsDeliveries } from '../webhooks-helpers.ts';
import { checkPage } from './helpers/checks.ts';
import { launchChromium, type TestBrowser } from './helpers/chromium.ts';

interface Endpoint {
  endpoint_url: string | null;
  secret_preview: string | null;
  previous_secret_expires_at: string | null;
  endpoint_problem: string | null;
  raw_secret?: string;
}

const PASSWORD = 'basic-auth-pw-7f3';
const DAY_MS = 24 * 60 * 60 * 1000;

describe('the webhook settings page', () => {
  let server: TestServer;
  let merchant: Merchant;
  let chromium: TestBrowser;
  let page: Page;
  let receiver: string;

  const getEndpoint = async () =>
    (await call<Endpoint>(server, 'GET', '/api/organization/webhook/', { token: merchant.token })).body;

  before(async () => {
    const built = await buildDashboard({ ifStale: true });
    if (!built.built && !built.message.includes('up to date')) throw new Error(built.message);
    server = await startTestServer({ worker: false });
    merchant = await createTestMerchant(server, 'Hook Shop');
    receiver = `${server.url}/api/v1/webhooks/${merchant.slug}/`;
    const set = await call<Endpoint>(server, 'PUT', '/api/organization/webhook/', {
      token: merchant.token,
      body: { endpoint_url: receiver },
    });
    assert.equal(set.status, 200);
    chromium = await launchChromium();
    page = (await chromium.newPage({ width: 1280, height: 900 })).page;
    await page.goto(`${server.url}/dashboard/login`);
    await page.getByLabel('Email').fill(merchant.email);
    await page.getByLabel('Password').fill(merchant.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Wallet (USD)' }).waitFor();
  });
  after(async () => {
    await chromium?.close();
    await server?.close();
  });

  test('an endpoint stored with credentials: the page says nothing is delivered and what to do, and the URL without them clears it', async () => {
    // As a row written before credentials were refused would be (PUT refuses them now).
    const withCredentials = receiver.replace('http://', `http://merchant:${PASSWORD}@`);
    await server.ctx.db
      .updateTable('webhook_endpoints')
      .set({ endpoint_url: withCredentials })
      .where('organization_id', '=', merchant.organizationId)
      .execute();

    await page.goto(`${server.url}/dashboard/developers/webhook`);
    const problem = page.getByRole('alert').filter({ hasText: 'Webhooks are not being delivered.' });
    await problem.waitFor();
    const text = (await problem.textContent()) ?? '';
    assert.match(text, /contains a user name and password \(user:password@\), which Kassa does\s+not send/);
    assert.match(text, /What to do: set the endpoint URL again without the user name and password/);
    const field = page.getByLabel('Endpoint URL');
    assert.equal(await field.inputValue(), receiver.replace('http://', 'http://merchant:****@'));
    assert.equal(await field.getAttribute('aria-invalid'), 'true');
    assert.equal(await field.getAttribute('aria-describedby'), await problem.getAttribute('id'));
    assert.equal((await page.content()).includes(PASSWORD), false, 'the password is never on the page');
    await checkPage(page, 'webhook-endpoint-problem');

    // Saving the URL as shown is refused, and the refusal is shown.
    await page.getByRole('button', { name: 'Save endpoint' }).click();
    await page
      .getByRole('alert')
      .filter({ hasText: 'Endpoint URL: may not contain credentials (user:password@).' })
      .waitFor();

    await problem.getByRole('button', { name: 'Remove the user name and password from the URL' }).click();
    assert.equal(await field.inputValue(), receiver);
    assert.equal(await field.getAttribute('aria-invalid'), null);
    assert.equal(await page.evaluate<string>('document.activeElement?.name'), 'endpoint_url');
    await page.keyboard.press('Enter');
    await page.getByText('The webhook endpoint was saved.').waitFor();
    await problem.waitFor({ state: 'detached' });
    const fixed = await getEndpoint();
    assert.deepEqual([fixed.endpoint_url, fixed.endpoint_problem], [receiver, null]);
  });

  test('rotating with a 24-hour overlap shows until when the previous secret verifies; a rotation with none ends it', async () => {
    await page.goto(`${server.url}/dashboard/developers/webhook`);
    const card = page.getByRole('region', { name: 'Signing secret' });
    await card.getByText('Current secret:').waitFor();
    assert.equal(await card.getByText('The previous secret also verifies').count(), 0);

    await card.getByRole('button', { name: 'Rotate secret' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rotate the signing secret?' });
    const overlap = dialog.getByRole('group', { name: 'The current secret keeps verifying for' });
    assert.equal(await overlap.getByRole('radio', { name: 'None' }).isChecked(), true);
    await dialog.getByText('Only the new secret verifies deliveries from now on').waitFor();
    // From the keyboard: the arrows move the choice within the group.
    await overlap.getByRole('radio', { name: 'None' }).focus();
    await page.keyboard.press('ArrowRight');
    await page.keyboard.press('ArrowRight');
    assert.equal(await overlap.getByRole('radio', { name: '24 hours' }).isChecked(), true);
    await dialog.getByText(/For 24 hours, every delivery's webhook-signature header/).waitFor();
    await checkPage(page, 'webhook-rotate-dialog');

    const asked = Date.now();
    await dialog.getByRole('button', { name: 'Rotate secret' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const answered = Date.now();
    const secret = (await page.getByTestId('one-time-secret').textContent()) ?? '';
    assert.match(secret, /^whsec_/);
    await page
      .getByText(/The secret was rotated\. The previous secret keeps verifying webhook-signature until/)
      .waitFor();
    const rotated = await getEndpoint();
    const expiresAt = rotated.previous_secret_expires_at;
    assert.ok(expiresAt, 'GET gives the end of the overlap');
    const expires = Date.parse(expiresAt);
    assert.ok(expires >= asked + DAY_MS - 1000 && expires <= answered + DAY_MS + 1000, expiresAt);
    await card.getByText(`Current secret: whsec_…${secret.slice(-4)}`).waitFor();
    const until = card.locator(`time[datetime="${expiresAt}"]`);
    await until.waitFor();
    assert.match((await until.textContent()) ?? '', /UTC$/);
    await card.getByText('The previous secret also verifies deliveries').waitFor();
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await checkPage(page, 'webhook-secret-overlap');

    // Rotating again with no overlap: the dialog says the kept secret stops verifying, and it does.
    await card.getByRole('button', { name: 'Rotate secret' }).click();
    assert.equal(await overlap.getByRole('radio', { name: 'None' }).isChecked(), true);
    await dialog.getByText('The secret an earlier rotation replaced stops verifying now').waitFor();
    await dialog.getByRole('button', { name: 'Rotate secret' }).click();
    await page
      .getByText('The secret was rotated. Only the new secret verifies deliveries from now on.')
      .waitFor();
    await card.getByText('The previous secret also verifies deliveries').waitFor({ state: 'detached' });
    assert.equal((await getEndpoint()).previous_secret_expires_at, null);
  });

  test('a delivery whose event is gone shows Redeliver disabled with the reason; one with its event redelivers', async () => {
    // Two test sends (the worker is off, so both stay pending); one loses its event, as a hand edit or
    // an old process during an upgrade can leave it (docs/webhooks.md).
    const sendTest = async () => {
      const sent = await call<{ delivery_id: string }>(server, 'POST', '/api/organization/webhook/test/', {
        token: merchant.token,
      });
      assert.equal(sent.status, 202, sent.text);
      const path = `/api/organization/webhook/deliveries/${sent.body.delivery_id}/`;
      const detail = await call<{ id: string; event_id: number }>(server, 'GET', path, {
        token: merchant.token,
      });
      assert.equal(detail.status, 200, detail.text);
      return detail;
    };
    const [kept, orphan] = [await sendTest(), await sendTest()];
    await deleteEventUnderItsDeliveries(server, orphan.body.event_id);
    const reason = 'The event of this delivery no longer exists, so it cannot be redelivered.';

    await page.goto(`${server.url}/dashboard/developers/deliveries?id=${orphan.body.id}`);
    await page.getByRole('heading', { name: `Delivery ${orphan.body.id}` }).waitFor();
    const unavailable = page.getByRole('button', { name: 'Redeliver' });
    assert.equal(await unavailable.isDisabled(), true, 'Redeliver is disabled for an eventless delivery');
    const note = page.getByText(reason);
    await note.waitFor();
    assert.equal(await unavailable.getAttribute('aria-describedby'), await note.getAttribute('id'));
    await checkPage(page, 'webhook-delivery-eventless');

    await page.goto(`${server.url}/dashboard/developers/deliveries?id=${kept.body.id}`);
    await page.getByRole('heading', { name: `Delivery ${kept.body.id}` }).waitFor();
    assert.equal(await page.getByText(reason).count(), 0);
    await page.getByRole('button', { name: 'Redeliver' }).click();
    await page.getByText(/Redelivery .* was queued/).waitFor();
  });
});
