import { call, createTestKey, createTestMerchant, startTestServer } from './test/helpers/server.ts';
import { launchChromium } from './test/browser/helpers/chromium.ts';
const server = await startTestServer();
const m = await createTestMerchant(server);
const p = await call<{ id: string }>(server, 'POST', '/api/products/', { token: m.token, body: { name: 'A', unit_price: '25.00' } });
const key = await createTestKey(server, m);
const c = await call<{ checkout_url: string; token: string }>(server, 'POST', '/api/checkout/create/', { apiKey: key, body: { billing_first_name: 'Ada', billing_last_name: 'L', billing_email: 'ada@example.com', billing_country: 'GB', products: [{ id: p.body.id }] } });
const pay = await call<{transaction_id: string}>(server, 'POST', `/api/checkout/${c.body.token}/pay/`, { body: { card_number: '4000000000000002', exp_month: 12, exp_year: 2034, cvc: '123', cardholder_name: 'Ada' } });
const b = await launchChromium();
const { page, context } = await b.newPage({ width: 390, height: 844 });
await context.addCookies([{ name: 'kassa_session', value: m.token, url: server.url }]);
await page.goto(`${server.url}/dashboard/payments/${pay.body.transaction_id}`);
await page.locator('#page-title').waitFor();
await page.waitForTimeout(1000);
console.log(await page.evaluate(`(() => {
  const out = [];
  for (const el of document.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.right > window.innerWidth + 1) out.push(el.tagName + '.' + el.className + ' ' + Math.round(r.left) + '-' + Math.round(r.right));
  }
  return [document.documentElement.scrollWidth, window.innerWidth, out.slice(0, 15)];
})()`));
await b.close();
await server.close();
