// Team and two-factor in a real Chromium against the real server: the owner invites a viewer from the Team
// page, the viewer accepts from the mailed link and cannot create an API key; the owner turns two-factor on
// (QR code, recovery codes) and logs in with a code; a stale session confirms its identity in the dialog
// before a sensitive action. The server's clock runs ahead of real time by `offset`, so the test can move
// to the next TOTP step or past the 10 minutes of recent authentication without waiting.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Page } from 'playwright-core';
import { buildDashboard } from '../../scripts/build-web.ts';
import { totpCode } from '../../src/modules/auth/totp.ts';
import { mailedToken } from '../helpers/accounts.ts';
import { createTestMerchant, type Merchant, startTestServer, type TestServer } from '../helpers/server.ts';
import { launchChromium, screenshot, type TestBrowser } from './helpers/chromium.ts';

describe('team and two-factor in the dashboard', () => {
  let server: TestServer;
  let owner: Merchant;
  let chromium: TestBrowser;
  let page: Page;
  let base: string;
  let offset = 0;
  const serverNow = () => new Date(Date.now() + offset);
  const viewerEmail = 'viewer@sunny.test';

  before(async () => {
    const built = await buildDashboard({ ifStale: true });
    if (!built.built && !built.message.includes('up to date')) throw new Error(built.message);
    server = await startTestServer({ worker: false, clock: serverNow });
    owner = await createTestMerchant(server, 'Sunny Team');
    base = `${server.url}/dashboard/`;
    chromium = await launchChromium();
    page = (await chromium.newPage({ width: 1280, height: 900 })).page;
  });
  after(async () => {
    await chromium?.close();
    await server?.close();
  });

  async function logIn(target: Page, email: string, password: string) {
    await target.goto(`${base}login`);
    await target.getByLabel('Email').fill(email);
    await target.getByLabel('Password').fill(password);
    await target.getByRole('button', { name: 'Log in' }).click();
  }

  test('the owner invites a viewer from the Team page', async () => {
    await logIn(page, owner.email, owner.password);
    await page.getByRole('heading', { name: 'Wallet (USD)' }).waitFor();
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Team', exact: true })
      .click();
    await page.getByRole('heading', { name: 'Invite a member' }).waitFor();
    await page.getByLabel('Email').fill(viewerEmail);
    await page.locator('select[name="role"]').selectOption('viewer');
    await page.getByRole('button', { name: 'Send invitation' }).click();
    await page.getByText(`Invitation sent to ${viewerEmail}.`).waitFor();
    await page.getByRole('region', { name: 'Pending invitations' }).getByText(viewerEmail).waitFor();
    await screenshot(page, 'team-invited');
  });

  test('the viewer accepts the mailed invitation and cannot create an API key', async () => {
    const viewer = (await chromium.newPage({ width: 1280, height: 900 })).page;
    const token = mailedToken(server, viewerEmail, 'accept-invite');
    await viewer.goto(`${base}accept-invite#token=${token}`);
    await viewer.getByRole('heading', { name: 'Join your team on Kassa' }).waitFor();
    await viewer.getByLabel('Your name').fill('Vera Viewer');
    await viewer.getByLabel(/Choose a password/).fill('viewer password 1');
    await viewer.getByRole('button', { name: 'Accept the invitation' }).click();
    await viewer.getByRole('heading', { name: 'Wallet (USD)' }).waitFor();
    await viewer
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Developers', exact: true })
      .click();
    await viewer.getByLabel('Name').fill('Sneaky key');
    await viewer.getByRole('button', { name: 'Create key' }).click();
    await viewer
      .getByRole('alert')
      .filter({ hasText: 'Your role (viewer) does not allow managing API keys.' })
      .waitFor();
    await screenshot(viewer, 'team-viewer-refused');
    const keys = await server.ctx.db
      .selectFrom('api_keys')
      .select('id')
      .where('organization_id', '=', owner.organizationId)
      .execute();
    assert.equal(keys.length, 0);
  });

  test('the owner turns two-factor on with the QR code and logs in with a code', async () => {
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Security', exact: true })
      .click();
    await page.getByRole('button', { name: 'Set up two-factor' }).click();
    await page.getByRole('img', { name: 'QR code for your authenticator app' }).waitFor();
    const secret = (await page.getByTestId('totp-secret').textContent()) ?? '';
    assert.match(secret, /^[A-Z2-7]{32}$/);
    await page.getByLabel('Code from the app').fill(totpCode(secret, serverNow()));
    await screenshot(page, 'team-two-factor-setup');
    await page.getByRole('button', { name: 'Turn on two-factor' }).click();
    const codes = page.getByTestId('recovery-codes').getByRole('listitem');
    await codes.first().waitFor();
    assert.equal(await codes.count(), 10);
    await page.getByRole('button', { name: 'I have saved them' }).click();
    await page.getByText('Two-factor is on').waitFor();

    await page.getByRole('button', { name: 'Log out' }).click();
    offset += 30_000; // the next step: the code used to turn it on is spent
    await logIn(page, owner.email, owner.password);
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    await page.getByLabel(/Code from your authenticator app/).fill(totpCode(secret, serverNow()));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { name: 'Wallet (USD)' }).waitFor();
  });

  test('a stale session confirms its identity in the dialog, then the key is created', async () => {
    offset += 11 * 60 * 1000;
    await page
      .getByRole('navigation', { name: 'Main' })
      .getByRole('link', { name: 'Developers', exact: true })
      .click();
    await page.getByLabel('Name').fill('Backend');
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Confirm your identity' });
    await dialog.waitFor();
    await dialog.getByLabel('Password').fill(owner.password);
    await screenshot(page, 'team-confirm-identity');
    await dialog.getByRole('button', { name: 'Confirm' }).click();
    await page.getByTestId('one-time-secret').waitFor();
    assert.match((await page.getByTestId('one-time-secret').textContent()) ?? '', /^kassa_live_/);
  });
});
