// Checks every dashboard page gets in the browser tests: axe-core's accessibility rules (no serious or
// critical violation), no sideways scroll, tables and dialogs that fit their box; each check saves what
// it found under test-artifacts/ so a failure can be read afterwards.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { screenshot } from './chromium.ts';

const AXE_DIR = fileURLToPath(new URL('../../../test-artifacts/axe/', import.meta.url));
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

interface AxeNode {
  target: string[];
  html: string;
  failureSummary?: string;
}

interface AxeViolation {
  id: string;
  impact: 'minor' | 'moderate' | 'serious' | 'critical' | null;
  help: string;
  nodes: AxeNode[];
}

/**
 * Runs axe-core (WCAG 2.0/2.1 A and AA rules and best practices) on the page as it is, saves the
 * violations to test-artifacts/axe/{name}.json, and fails on any serious or critical one.
 */
export async function assertAccessible(page: Page, name: string): Promise<void> {
  // Evaluated through DevTools, so the page's CSP (script-src 'self') does not apply to the injection.
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate<AxeViolation[]>(`(async () => {
    const result = await window.axe.run(document, {
      runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
      resultTypes: ['violations'],
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => ({ target: n.target, html: n.html.slice(0, 300), failureSummary: n.failureSummary })),
    }));
  })()`);
  mkdirSync(AXE_DIR, { recursive: true });
  writeFileSync(join(AXE_DIR, `${name}.json`), `${JSON.stringify(violations, null, 2)}\n`);
  const severe = violations.filter(
    (violation) => violation.impact === 'serious' || violation.impact === 'critical',
  );
  assert.deepEqual(
    severe.map(
      (violation) =>
        `${violation.impact} ${violation.id}: ${violation.help} at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`,
    ),
    [],
    `axe-core on ${name}`,
  );
}

/** The page does not scroll sideways (its content is no wider than the window). */
export async function assertNoSidewaysScroll(page: Page, name: string): Promise<void> {
  const overflow = await page.evaluate<{ by: number; widest: string }>(`(() => {
    const by = document.documentElement.scrollWidth - window.innerWidth;
    // Content inside a scrolling box (a wide table) is clipped there and does not widen the page,
    // unless it is positioned outside it (an absolute element whose containing block is further up).
    const clipped = (element) => {
      if (getComputedStyle(element).position === 'absolute') return false;
      for (let parent = element.parentElement; parent && parent !== document.body; parent = parent.parentElement) {
        if (getComputedStyle(parent).overflowX !== 'visible') return true;
      }
      return false;
    };
    let widest = '';
    if (by > 1) {
      let right = 0;
      for (const element of document.querySelectorAll('body *')) {
        const box = element.getBoundingClientRect();
        if (box.right > right && box.width > 0 && !clipped(element)) {
          right = box.right;
          const classes = typeof element.className === 'string' && element.className ? '.' + element.className.split(' ').join('.') : '';
          widest = element.tagName.toLowerCase() + classes + ' "' + (element.textContent || '').trim().slice(0, 40) + '" (' + Math.round(box.right) + 'px)';
        }
      }
    }
    return { by, widest };
  })()`);
  assert.ok(
    overflow.by <= 1,
    `${name} scrolls sideways by ${overflow.by}px; the widest element is ${overflow.widest}`,
  );
}

/** Each matching element shows all of its content without a horizontal scrollbar. */
export async function assertFits(page: Page, selector: string, what: string): Promise<void> {
  const boxes = await page.evaluate<{ scroll: number; client: number }[]>(
    `[...document.querySelectorAll(${JSON.stringify(selector)})].map((e) => ({ scroll: e.scrollWidth, client: e.clientWidth }))`,
  );
  assert.ok(boxes.length > 0, `no ${what} on the page`);
  for (const box of boxes) {
    assert.ok(box.scroll <= box.client + 1, `${what}: content ${box.scroll}px wide in a ${box.client}px box`);
  }
}

/** The usual checks of a page at one width, then its screenshot (test-artifacts/screenshots/{name}.png). */
export async function checkPage(page: Page, name: string): Promise<void> {
  await assertNoSidewaysScroll(page, name);
  await assertAccessible(page, name);
  await screenshot(page, name);
}
