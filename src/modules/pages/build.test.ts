import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { buildHostedPage, expandIncludes, minifyCss, minifyJs, pickEncoding } from './build.ts';

function inlineBlock(html: string, tag: 'script' | 'style'): string {
  const match = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(html);
  assert.ok(match, `no inline <${tag}>`);
  return match[1];
}

const hashOf = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

describe('hosted page build', () => {
  for (const file of ['checkout.html', 'pay.html']) {
    test(`${file} inlines its sources and its CSP allows exactly those blocks`, () => {
      const page = buildHostedPage(file);
      const html = page.bodies.identity.toString('utf8');
      assert.doesNotMatch(html, /<script src=|<link rel="stylesheet"/);
      assert.equal((html.match(/<script>/g) ?? []).length, 1);
      assert.ok(page.csp.includes(`script-src ${hashOf(inlineBlock(html, 'script'))}`));
      assert.ok(page.csp.includes(`style-src ${hashOf(inlineBlock(html, 'style'))}`));
      assert.match(page.csp, /default-src 'none'/);
      assert.match(page.csp, /frame-ancestors 'none'/);
      assert.doesNotMatch(page.csp, /unsafe/);
      assert.deepEqual(gunzipSync(page.bodies.gzip), page.bodies.identity);
      assert.deepEqual(brotliDecompressSync(page.bodies.br), page.bodies.identity);
    });
  }

  test("the Stripe variant of the checkout loads Stripe.js under Stripe's CSP; the default never does", () => {
    const plain = buildHostedPage('checkout.html');
    const stripe = buildHostedPage('checkout.html', undefined, { stripe: true });
    assert.doesNotMatch(plain.bodies.identity.toString('utf8'), /stripe\.com/);
    assert.doesNotMatch(plain.csp, /stripe\.com/);
    assert.match(plain.csp, /require-trusted-types-for 'script'/);
    const html = stripe.bodies.identity.toString('utf8');
    assert.equal((html.match(/<script src="https:\/\/js\.stripe\.com\/v3\/"><\/script>/g) ?? []).length, 1);
    assert.ok(stripe.csp.includes(`script-src ${hashOf(inlineBlock(html, 'script'))} https://js.stripe.com`));
    assert.match(stripe.csp, /connect-src 'self' https:\/\/api\.stripe\.com/);
    assert.match(stripe.csp, /frame-src https:\/\/js\.stripe\.com https:\/\/hooks\.stripe\.com/);
    assert.match(stripe.csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(stripe.csp, /unsafe/);
  });

  test('the pages take their shared parts from shared.html, placeholders filled', () => {
    for (const [file, title] of [
      ['checkout.html', 'Checkout'],
      ['pay.html', 'Payment'],
    ]) {
      const html = buildHostedPage(file).bodies.identity.toString('utf8');
      assert.ok(html.startsWith('<!doctype html>\n<html lang="en">\n<head>\n'), file);
      assert.ok(html.includes(`<title>${title}</title>`), file);
      assert.ok(html.includes('id="summary-title"') && html.includes('data-screen="result"'), file);
      assert.ok(html.endsWith('</body>\n</html>\n'), file);
      assert.doesNotMatch(html, /<!--|\{\{/, file);
    }
  });

  test('an include names an existing part and fills exactly its placeholders', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kassa-hosted-'));
    try {
      writeFileSync(
        join(dir, 'parts.html'),
        '<!-- notes -->\n<!-- part hello -->\n<p>{{greeting}}, {{name}}</p>\n\n<!-- part bye -->\n<p>Bye</p>\n',
      );
      const url = pathToFileURL(`${dir}/`);
      const include = (line: string) => expandIncludes(`<main>\n  ${line}\n</main>`, url);
      assert.equal(
        include('<!-- include parts.html#hello greeting="Hi" name="Ada" -->'),
        '<main>\n  <p>Hi, Ada</p>\n</main>',
      );
      assert.equal(include('<!-- include parts.html#bye -->'), '<main>\n  <p>Bye</p>\n</main>');
      assert.throws(() => include('<!-- include parts.html#nope -->'), /has no part "nope"/);
      assert.throws(
        () => include('<!-- include parts.html#hello greeting="Hi" -->'),
        /no value for \{\{name\}\}/,
      );
      assert.throws(() => include('<!-- include parts.html#bye extra="x" -->'), /has no \{\{extra\}\}/);
      assert.throws(() => include("<!-- include parts.html#hello greeting='Hi' -->"), /not an include line/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the inlined script keeps its own replacement patterns intact', () => {
    const html = buildHostedPage('checkout.html').bodies.identity.toString('utf8');
    assert.ok(html.includes("'$1 '"), 'the card-number grouping pattern survived inlining');
  });

  test('the minifiers drop comments and indentation only', () => {
    assert.equal(minifyCss('/* c */\na {\n  color: red;\n}\n.b > c { x: 1 }'), 'a{color:red}.b>c{x:1}');
    assert.equal(
      minifyJs('// c\n/**\n * doc\n */\nconst a = 1;\n\n  if (a) {\n    f("// not a comment");\n  }'),
      'const a = 1;\nif (a) {\nf("// not a comment");\n}',
    );
  });

  test('the encoding follows Accept-Encoding, brotli first, and honours q=0', () => {
    assert.equal(pickEncoding('gzip, deflate, br, zstd'), 'br');
    assert.equal(pickEncoding('gzip'), 'gzip');
    assert.equal(pickEncoding('br;q=0, gzip;q=0.5'), 'gzip');
    assert.equal(pickEncoding('identity'), 'identity');
    assert.equal(pickEncoding(undefined), 'identity');
  });
});
