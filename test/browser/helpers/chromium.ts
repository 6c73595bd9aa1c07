// Browser tests drive Debian's Chromium (/usr/bin/chromium) through playwright-core. Chromium is
// started here with exactly the flags the project uses (headless, no sandbox, nothing phoning home)
// and a fresh user-data dir, and Playwright attaches over the DevTools protocol. Each test gets its
// own browser context (cookies and storage isolated), and every page records what it requested and
// logged, so tests can prove that card data never reaches a URL, storage or the console.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM_PATH = process.env.KASSA_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOT_DIR = fileURLToPath(new URL('../../../test-artifacts/screenshots/', import.meta.url));

export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const START_TIMEOUT_MS = 20_000;

/** What a page did: every request it made (URL, method, body) and every console line or page error. */
export interface PageRecord {
  requests: { method: string; url: string; body: string | null }[];
  console: string[];
  errors: string[];
}

export interface TestPage {
  page: Page;
  context: BrowserContext;
  record: PageRecord;
}

export interface TestBrowser {
  browser: Browser;
  newPage(options?: { width?: number; height?: number }): Promise<TestPage>;
  close(): Promise<void>;
}

function devToolsUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      reject(new Error(`Chromium did not start within ${START_TIMEOUT_MS} ms:\n${output}`));
    }, START_TIMEOUT_MS);
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /DevTools listening on (ws:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`Chromium exited (code ${code}) before it was ready:\n${output}`));
    });
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

export async function launchChromium(): Promise<TestBrowser> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'kassa-chromium-'));
  const child = spawn(
    CHROMIUM_PATH,
    [...CHROMIUM_FLAGS, `--user-data-dir=${userDataDir}`, '--remote-debugging-port=0', 'about:blank'],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let browser: Browser;
  try {
    browser = await chromium.connectOverCDP(await devToolsUrl(child));
  } catch (error) {
    await stopProcess(child);
    rmSync(userDataDir, { recursive: true, force: true });
    throw error;
  }
  const contexts: BrowserContext[] = [];
  return {
    browser,
    async newPage(options = {}) {
      const context = await browser.newContext({
        viewport: { width: options.width ?? 1024, height: options.height ?? 800 },
        locale: 'en-US',
        timezoneId: 'UTC',
      });
      contexts.push(context);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      const record: PageRecord = { requests: [], console: [], errors: [] };
      page.on('request', (request) => {
        record.requests.push({ method: request.method(), url: request.url(), body: request.postData() });
      });
      page.on('console', (message) => record.console.push(`${message.type()}: ${message.text()}`));
      page.on('pageerror', (error) => record.errors.push(String(error)));
      return { page, context, record };
    },
    async close() {
      for (const context of contexts) await context.close().catch(() => {});
      await browser.close().catch(() => {});
      await stopProcess(child);
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** Saves a full-page PNG under test-artifacts/screenshots/ and returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

export interface MerchantSite {
  url: string;
  /** Every request the site received, with its headers (to check what the browser sent along). */
  hits: { path: string; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}

/** A tiny merchant web site on loopback: the successUrl / failedUrl / cancelUrl a checkout returns to. */
export async function startMerchantSite(): Promise<MerchantSite> {
  const hits: MerchantSite['hits'] = [];
  const server = createServer((request, response) => {
    hits.push({ path: request.url ?? '/', headers: request.headers });
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!doctype html><title>Merchant</title><h1>Merchant page ${request.url ?? ''}</h1>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
