// What the hosted checkout's browser tests share: typing a card into the form, and the check that a page
// ran without a script error or a Content-Security-Policy / Trusted Types violation.
import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import type { PageRecord } from './chromium.ts';

export const EXPIRY = `12 / ${String((new Date().getFullYear() + 3) % 100).padStart(2, '0')}`;

export async function fillCard(page: Page, number: string): Promise<void> {
  await page.getByLabel('Name on card').fill('Ada Lovelace');
  await page.getByLabel('Card number').fill(number);
  await page.getByLabel('Expiry date').fill(EXPIRY);
  await page.getByLabel('Security code').fill('123');
}

/** No script errors, and no Content-Security-Policy or Trusted Types violation on the page. */
export function assertCleanConsole(record: PageRecord): void {
  assert.deepEqual(record.errors, []);
  const violations = record.console.filter((line) =>
    /Content Security Policy|Trusted Type|Refused to/i.test(line),
  );
  assert.deepEqual(violations, []);
}
