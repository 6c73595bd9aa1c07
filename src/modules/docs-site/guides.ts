// The guides the docs site serves: docs/*.md, the README, and the SDK's README and CHANGELOG, rendered
// once per process. Relative links between them become site paths (/docs/<name>#anchor), so a reader
// of the site never follows a link to a file the site does not serve.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { escapeHtml, renderMarkdown } from './markdown.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface Guide {
  /** The path segment under /docs/ (quickstart is also the landing page, /docs). */
  name: string;
  /** The file, relative to the repository root, as links in other guides name it. */
  source: string;
  title: string;
  html: string;
  anchors: string[];
}

/** The order of the side menu; guides not listed here follow in alphabetical order. */
const ORDER = [
  'quickstart',
  'readme',
  'sdk',
  'sdk-changelog',
  'checkout-and-payments',
  'webhooks',
  'wallet-refunds-payouts',
  'decisions',
  'deploy',
  'operations',
  'architecture',
  'performance',
];

function sources(): { name: string; source: string }[] {
  const docs = readdirSync(join(REPO_ROOT, 'docs'))
    .filter((file) => file.endsWith('.md'))
    .map((file) => ({ name: basename(file, '.md'), source: `docs/${file}` }));
  const extra = [
    { name: 'readme', source: 'README.md' },
    { name: 'sdk', source: 'sdk/README.md' },
    { name: 'sdk-changelog', source: 'sdk/CHANGELOG.md' },
  ].filter((entry) => existsSync(join(REPO_ROOT, entry.source)));
  const rank = (name: string) => (ORDER.includes(name) ? ORDER.indexOf(name) : ORDER.length);
  return [...docs, ...extra].sort((a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name));
}

/** A link target of the guide at `from` as a site path: .md files of the site become /docs/<name>. */
export function siteHref(from: string, target: string, names: Map<string, string>): string {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#') || target.startsWith('/')) return target;
  const [path, anchor] = target.split('#', 2);
  const resolved = posix.normalize(posix.join(posix.dirname(from), path));
  const name = names.get(resolved);
  if (name === undefined) return target;
  return `/docs/${name}${anchor === undefined ? '' : `#${anchor}`}`;
}

let cache: Map<string, Guide> | null = null;

/** Every guide by name, rendered on first use. */
export function guides(): Map<string, Guide> {
  if (cache) return cache;
  const list = sources();
  const names = new Map(list.map((entry) => [entry.source, entry.name]));
  cache = new Map(
    list.map(({ name, source }) => {
      const text = readFileSync(join(REPO_ROOT, source), 'utf8');
      const rendered = renderMarkdown(text, (target) => siteHref(source, target, names));
      return [
        name,
        { name, source, title: rendered.title || name, html: rendered.html, anchors: rendered.anchors },
      ];
    }),
  );
  return cache;
}

/** The HTML page of a guide: the side menu of every guide and the API reference, then the guide. */
export function guidePage(guide: Guide): string {
  const menu = [...guides().values()]
    .map((entry) => {
      const current = entry.name === guide.name ? ' aria-current="page"' : '';
      return `<li><a href="/docs/${entry.name}"${current}>${escapeHtml(entry.title)}</a></li>`;
    })
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(guide.title)} · Kassa docs</title>
<link rel="stylesheet" href="/docs/assets/docs.css"></head>
<body><a class="skip" href="#content">Skip to the guide</a><div class="layout">
<nav class="guides" aria-label="Documentation"><p class="brand">Kassa docs</p>
<h2>Guides</h2><ul>${menu}</ul>
<h2>Reference</h2><ul><li><a href="/docs/api">API reference</a></li>
<li><a href="/api/openapi.json">OpenAPI document (JSON)</a></li>
<li><a href="/dashboard/">Dashboard</a></li></ul></nav>
<main id="content" class="guide">${guide.html}</main></div></body></html>
`;
}

export const API_REFERENCE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference · Kassa docs</title>
<link rel="stylesheet" href="/docs/assets/docs.css"></head>
<body class="reference"><header class="topbar"><strong>Kassa API reference</strong>
<a href="/docs/">Guides</a><a href="/api/openapi.json">OpenAPI document</a></header>
<div id="redoc"><noscript>The reference needs JavaScript; the
<a href="/api/openapi.json">OpenAPI document</a> is the same content as JSON.</noscript></div>
<script type="module" src="/docs/assets/api-reference.js"></script></body></html>
`;
