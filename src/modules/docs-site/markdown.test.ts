import assert from 'node:assert/strict';
import { test } from 'node:test';
import { renderMarkdown, slug } from './markdown.ts';

test('headings get GitHub anchor ids and the first h1 is the title', () => {
  const page = renderMarkdown(
    '# Operating Kassa\n\n## The SSRF guard\n\n### Decisions where the interface left room',
  );
  assert.equal(page.title, 'Operating Kassa');
  assert.deepEqual(page.anchors, [
    'operating-kassa',
    'the-ssrf-guard',
    'decisions-where-the-interface-left-room',
  ]);
  assert.equal(slug('1. Node.js 24 and the `code`'), '1-nodejs-24-and-the-code');
});

test('text, code and raw HTML are escaped: a guide cannot inject markup', () => {
  const page = renderMarkdown(
    'Hi <script>alert(1)</script> `<b>` **bold**\n\n```html\n<img src=x onerror=alert(1)>\n```',
  );
  assert.doesNotMatch(page.html, /<script|<img|<b>/);
  assert.match(page.html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
  assert.match(page.html, /<code>&lt;b&gt;<\/code> <strong>bold<\/strong>/);
  assert.match(
    page.html,
    /<pre><code class="language-html">&lt;img src=x onerror=alert\(1\)&gt;<\/code><\/pre>/,
  );
});

test('links are mapped, may hold code in their label, and bold may span code', () => {
  const href = (target: string) => (target === 'webhooks.md#retries' ? '/docs/webhooks#retries' : target);
  const page = renderMarkdown('See [`retries`](webhooks.md#retries) and **the `sim_payments` table**.', href);
  assert.match(page.html, /<a href="\/docs\/webhooks#retries"><code>retries<\/code><\/a>/);
  assert.match(page.html, /<strong>the <code>sim_payments<\/code> table<\/strong>/);
  assert.match(renderMarkdown('[site](https://example.com)').html, /rel="noopener"/);
});

test('tables (with escaped pipes), nested lists, ordered lists, quotes and escapes', () => {
  const page = renderMarkdown(
    '| A | B |\n|---|---|\n| `a\\|b` | 2 |\n\n- one\n  - inner\n- two\n\n1. first\n2. second\n\n> quoted\n\n5\\. not a list',
  );
  assert.match(
    page.html,
    /<table><thead><tr><th>A<\/th><th>B<\/th><\/tr><\/thead><tbody><tr><td><code>a\|b<\/code><\/td><td>2<\/td>/,
  );
  assert.match(page.html, /<ul><li>one<ul><li>inner<\/li><\/ul><\/li><li>two<\/li><\/ul>/);
  assert.match(page.html, /<ol><li>first<\/li><li>second<\/li><\/ol>/);
  assert.match(page.html, /<blockquote><p>quoted<\/p><\/blockquote>/);
  assert.match(page.html, /<p>5\. not a list<\/p>/);
});
