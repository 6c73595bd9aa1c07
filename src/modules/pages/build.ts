// Builds each hosted page once, at start-up, from its sources in web/hosted: the stylesheet and the
// scripts are inlined into the HTML (one request per page, nothing for the customer's browser to fetch
// before it can draw), the Content-Security-Policy allows exactly those inline blocks by their SHA-256,
// and the result is compressed once with brotli and gzip.
//
// What the pages share (head, order summary, result screen) is written once, in parts of shared.html:
// a page's line `<!-- include shared.html#NAME key="value" -->` stands for that part, with each
// {{key}} in it filled in.
//
// The light minifier is line-based, so the sources keep to two conventions: comments sit on their own
// lines, and no multi-line template literal has a line that starts with a comment marker.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

export const HOSTED_DIR = new URL('../../../web/hosted/', import.meta.url);

export type Encoding = 'br' | 'gzip' | 'identity';

export interface HostedPage {
  csp: string;
  bodies: Record<Encoding, Buffer>;
}

const INCLUDE = /<!-- include ([\w.-]+\.html)#([\w-]+)((?: [\w-]+="[^"]*")*) -->/g;
const PART = /^<!-- part ([\w-]+) -->\n/gm;
const PLACEHOLDER = /\{\{([\w-]+)\}\}/g;
const STYLESHEET = /<link rel="stylesheet" href="([\w.-]+\.css)">\n?/g;
const SCRIPT = /<script src="([\w.-]+\.js)"><\/script>\n?/g;

export function minifyCss(source: string): string {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\s+/g, ' ')
    .replace(/\s*([{};,>])\s*/g, '$1')
    .replace(/:\s+/g, ':')
    .replace(/;}/g, '}')
    .trim();
}

export function minifyJs(source: string): string {
  const lines: string[] = [];
  let inBlockComment = false;
  for (const raw of source.split('\n')) {
    const line = raw.trim();
    if (inBlockComment) {
      if (line.includes('*/')) inBlockComment = false;
      continue;
    }
    if (line.startsWith('/*')) {
      inBlockComment = !line.includes('*/');
      continue;
    }
    if (line === '' || line.startsWith('//')) continue;
    lines.push(line);
  }
  return lines.join('\n');
}

function sha256(text: string): string {
  return `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
}

function read(dir: URL, name: string): string {
  return readFileSync(new URL(name, dir), 'utf8');
}

/** The named parts of a file of shared parts: each runs from its `<!-- part NAME -->` line to the next. */
function readParts(dir: URL, file: string): Map<string, string> {
  const pieces = read(dir, file).split(PART);
  const parts = new Map<string, string>();
  for (let i = 1; i < pieces.length; i += 2) parts.set(pieces[i], pieces[i + 1].trimEnd());
  return parts;
}

/** The page's source with each include line replaced by the part it names, its placeholders filled. */
export function expandIncludes(html: string, dir: URL = HOSTED_DIR): string {
  const expanded = html.replace(INCLUDE, (line, file: string, name: string, attributes: string) => {
    const part = readParts(dir, file).get(name);
    if (part === undefined) throw new Error(`${line}: ${file} has no part "${name}".`);
    const values = new Map(
      [...attributes.matchAll(/([\w-]+)="([^"]*)"/g)].map(([, key, value]) => [key, value]),
    );
    const unused = new Set(values.keys());
    const filled = part.replace(PLACEHOLDER, (_placeholder, key: string) => {
      const value = values.get(key);
      if (value === undefined) throw new Error(`${line}: no value for {{${key}}}.`);
      unused.delete(key);
      return value;
    });
    if (unused.size > 0) throw new Error(`${line}: part "${name}" has no {{${[...unused].join('}}, {{')}}}.`);
    return filled;
  });
  const leftover = /<!-- include[^\n]*/.exec(expanded);
  if (leftover) throw new Error(`${leftover[0]}: not an include line this build understands.`);
  return expanded;
}

/** Stripe.js, loaded only by the checkout page of a service whose production runs on Stripe. */
export const STRIPE_JS = 'https://js.stripe.com/v3/';

export interface BuildOptions {
  /**
   * The Payment Element: Stripe.js from js.stripe.com, its frames, and its calls to api.stripe.com are
   * allowed (Stripe's documented CSP); Trusted Types are not required, since Stripe.js is not written for
   * them. Card data stays in Stripe's frames.
   */
  stripe?: boolean;
}

function contentSecurityPolicy(script: string, style: string, stripe: boolean): string {
  const directives = stripe
    ? [
        "default-src 'none'",
        `script-src ${sha256(script)} https://js.stripe.com`,
        `style-src ${sha256(style)}`,
        "connect-src 'self' https://api.stripe.com",
        'frame-src https://js.stripe.com https://hooks.stripe.com',
        "img-src 'self' data: https://*.stripe.com",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
      ]
    : [
        "default-src 'none'",
        `script-src ${sha256(script)}`,
        `style-src ${sha256(style)}`,
        "connect-src 'self'",
        "img-src 'self' data:",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
      ];
  return directives.join('; ');
}

/** One page: its HTML with the stylesheet and scripts inlined, its CSP, and its compressed bodies. */
export function buildHostedPage(
  htmlFile: string,
  dir: URL = HOSTED_DIR,
  options: BuildOptions = {},
): HostedPage {
  let html = expandIncludes(read(dir, htmlFile), dir);
  const styles: string[] = [];
  const scripts: string[] = [];
  html = html.replace(STYLESHEET, (_tag, name: string) => {
    styles.push(minifyCss(read(dir, name)));
    return '';
  });
  html = html.replace(SCRIPT, (_tag, name: string) => {
    scripts.push(minifyJs(read(dir, name)));
    return '';
  });
  if (styles.length === 0 || scripts.length === 0) {
    throw new Error(`${htmlFile}: expected a stylesheet link and script tags to inline.`);
  }
  // One strict function around all the page's scripts: shared helpers stay out of the global scope.
  const script = `(()=>{'use strict';\n${scripts.join('\n')}\n})();`;
  const style = styles.join('');
  if (/<\/script/i.test(script) || /<\/style/i.test(style)) {
    throw new Error(`${htmlFile}: an inlined source contains a closing tag.`);
  }
  // Function replacers: the script's own "$1" must not be read as a replacement pattern.
  html = html
    .replace(/\n\s+/g, '\n')
    .replace('</head>', () =>
      options.stripe
        ? `<style>${style}</style>\n<script src="${STRIPE_JS}"></script>\n</head>`
        : `<style>${style}</style>\n</head>`,
    )
    .replace('</body>', () => `<script>${script}</script>\n</body>`);
  const csp = contentSecurityPolicy(script, style, options.stripe === true);
  const identity = Buffer.from(html, 'utf8');
  return {
    csp,
    bodies: {
      identity,
      gzip: gzipSync(identity, { level: 9 }),
      br: brotliCompressSync(identity, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
          [constants.BROTLI_PARAM_SIZE_HINT]: identity.length,
        },
      }),
    },
  };
}

/** The best encoding the client accepts: brotli, then gzip, else none. */
export function pickEncoding(acceptEncoding: string | undefined): Encoding {
  if (!acceptEncoding) return 'identity';
  const accepted = new Set<string>();
  for (const part of acceptEncoding.toLowerCase().split(',')) {
    const [name, ...params] = part.trim().split(';');
    const refused = params.some((param) => /^\s*q\s*=\s*0(\.0*)?\s*$/.test(param));
    if (!refused) accepted.add(name.trim());
  }
  if (accepted.has('br')) return 'br';
  if (accepted.has('gzip') || accepted.has('*')) return 'gzip';
  return 'identity';
}
