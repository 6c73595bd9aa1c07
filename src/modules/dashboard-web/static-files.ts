// Reads the built dashboard from disk and keeps each file in memory with its compressed forms.
// A file is re-read when its size or mtime changes, so a rebuild needs no restart. Precompressed
// siblings (`app.js.br`, `app.js.gz`, written by scripts/build-web.ts) are used when present;
// otherwise the file is compressed once on first request with node:zlib.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompress, gzip, constants as zlibConstants } from 'node:zlib';

const brotli = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

export type Encoding = 'br' | 'gzip';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.txt': 'text/plain; charset=utf-8',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.webp': 'image/webp',
  '.woff2': 'font/woff2',
};

const COMPRESSIBLE = new Set(['.html', '.js', '.mjs', '.css', '.json', '.map', '.svg', '.txt']);
const MIN_COMPRESS_BYTES = 512;

export interface StaticFile {
  body: Buffer;
  contentType: string;
  etag: string;
  compressible: boolean;
  mtimeMs: number;
  size: number;
  encoded: Map<Encoding, Promise<Buffer>>;
  path: string;
}

/**
 * Maps the part of the URL after /dashboard/ to a file path inside `root`, or null when it is not a
 * plain relative path (dot segments, hidden files, backslashes, NUL) or names a compressed sibling.
 */
export function resolveInside(root: string, urlPath: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(urlPath);
  } catch {
    return null;
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return null;
  const segments = decoded.split('/').filter((segment) => segment !== '');
  if (segments.some((segment) => segment.startsWith('.'))) return null;
  if (/\.(br|gz)$/.test(decoded)) return null;
  if (segments.length === 0) return root;
  const file = normalize(join(root, ...segments));
  const base = root.endsWith(sep) ? root : root + sep;
  return file.startsWith(base) ? file : null;
}

/** The encoding to send for an Accept-Encoding header: brotli first, then gzip; q=0 refuses one. */
export function negotiateEncoding(header: string | undefined): Encoding | null {
  if (!header) return null;
  const accepted = new Map<string, number>();
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    let quality = 1;
    for (const param of params) {
      const [key, value] = param.trim().split('=');
      if (key === 'q') quality = Number(value);
    }
    accepted.set(name, Number.isFinite(quality) ? quality : 0);
  }
  const wildcard = accepted.get('*');
  const quality = (name: string) => accepted.get(name) ?? wildcard ?? 0;
  if (quality('br') > 0) return 'br';
  if (quality('gzip') > 0) return 'gzip';
  return null;
}

async function readSibling(path: string, mtimeMs: number): Promise<Buffer | null> {
  try {
    const info = await stat(path);
    if (!info.isFile() || info.mtimeMs < mtimeMs) return null;
    return await readFile(path);
  } catch {
    return null;
  }
}

async function compress(file: StaticFile, encoding: Encoding): Promise<Buffer> {
  const precompressed = await readSibling(`${file.path}.${encoding === 'br' ? 'br' : 'gz'}`, file.mtimeMs);
  if (precompressed) return precompressed;
  if (encoding === 'br') {
    return brotli(file.body, {
      params: {
        [zlibConstants.BROTLI_PARAM_QUALITY]: 9,
        [zlibConstants.BROTLI_PARAM_SIZE_HINT]: file.body.length,
      },
    });
  }
  return gzipAsync(file.body, { level: 9 });
}

export class StaticFiles {
  readonly root: string;
  private readonly cache = new Map<string, StaticFile>();

  constructor(root: string) {
    this.root = root;
  }

  /** The file at `path` (absolute, inside root), or null when there is no such regular file. */
  async get(path: string): Promise<StaticFile | null> {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(path);
    } catch {
      this.cache.delete(path);
      return null;
    }
    if (!info.isFile()) return null;
    const cached = this.cache.get(path);
    if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached;
    let body: Buffer;
    try {
      body = await readFile(path);
    } catch {
      return null;
    }
    const extension = extname(path).toLowerCase();
    const file: StaticFile = {
      body,
      contentType: CONTENT_TYPES[extension] ?? 'application/octet-stream',
      etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
      compressible: COMPRESSIBLE.has(extension) && body.length >= MIN_COMPRESS_BYTES,
      mtimeMs: info.mtimeMs,
      size: info.size,
      encoded: new Map(),
      path,
    };
    this.cache.set(path, file);
    return file;
  }

  /** The body in `encoding`, computed (or read from the precompressed sibling) once per file version. */
  encode(file: StaticFile, encoding: Encoding): Promise<Buffer> {
    let pending = file.encoded.get(encoding);
    if (!pending) {
      pending = compress(file, encoding);
      file.encoded.set(encoding, pending);
      pending.catch(() => file.encoded.delete(encoding));
    }
    return pending;
  }
}
