// A stand-in for Stripe.js in the browser tests (Stripe cannot be reached from here): served at
// https://js.stripe.com/v3/ and talking to https://api.stripe.com, both routed by Playwright to the fake
// Stripe, so the hosted page runs under its real Stripe-mode CSP. Its "Payment Element" is a select of
// Stripe's test payment methods; confirmPayment confirms the PaymentIntent with the publishable key and
// the client secret, as Stripe.js does.
import type { Page } from 'playwright-core';
import type { FakeStripe } from '../../helpers/fake-stripe/server.ts';

const FAKE_STRIPE_JS = `
window.Stripe = function (publishableKey) {
  window.fakeStripeCalls = window.fakeStripeCalls || [];
  window.fakeStripeCalls.push({ publishableKey: publishableKey });
  return {
    elements: function (options) {
      window.fakeStripeCalls.push({ clientSecret: options.clientSecret });
      return {
        clientSecret: options.clientSecret,
        create: function () {
          return {
            mount: function (selector) {
              var root = document.querySelector(selector);
              var label = document.createElement('label');
              label.htmlFor = 'fake-pm';
              label.textContent = 'Test card';
              var select = document.createElement('select');
              select.id = 'fake-pm';
              ['pm_card_visa', 'pm_card_chargeDeclined'].forEach(function (id) {
                var option = document.createElement('option');
                option.value = id;
                option.textContent = id;
                select.appendChild(option);
              });
              root.replaceChildren(label, select);
            },
          };
        },
      };
    },
    confirmPayment: async function (options) {
      var secret = options.elements.clientSecret;
      var id = secret.split('_secret_')[0];
      window.fakeStripeCalls.push({ returnUrl: options.confirmParams.return_url, redirect: options.redirect });
      var response = await fetch('https://api.stripe.com/v1/payment_intents/' + id + '/confirm', {
        method: 'POST',
        headers: { authorization: 'Bearer ' + publishableKey, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_secret: secret, payment_method: document.getElementById('fake-pm').value }),
      });
      var body = await response.json();
      return body.error ? { error: body.error } : { paymentIntent: body };
    },
  };
};
`;

/** Serves the stand-in Stripe.js and forwards https://api.stripe.com to the fake Stripe, for one page. */
export async function routeStripe(page: Page, fake: FakeStripe): Promise<void> {
  await page.route('https://js.stripe.com/v3/', (route) =>
    route.fulfill({ status: 200, contentType: 'application/javascript', body: FAKE_STRIPE_JS }),
  );
  await page.route('https://api.stripe.com/**', async (route) => {
    const request = route.request();
    const url = new URL(request.url());
    const headers = await request.allHeaders();
    const response = await fetch(`${fake.url}${url.pathname}${url.search}`, {
      method: request.method(),
      headers: { authorization: headers.authorization ?? '', 'content-type': headers['content-type'] ?? '' },
      body: request.method() === 'GET' ? undefined : (request.postData() ?? undefined),
    });
    await route.fulfill({
      status: response.status,
      contentType: 'application/json',
      headers: { 'access-control-allow-origin': '*' },
      body: await response.text(),
    });
  });
}
