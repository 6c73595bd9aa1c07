// Builds the merchant dashboard (web/dashboard → web/dist/dashboard) with Vite and writes brotli and
// gzip siblings of its text files, which the server sends as they are.
//
//   node scripts/build-web.ts              build now
//   node scripts/build-web.ts --if-stale   skip when the sources have not changed since the last build
//
// `npm run build` runs it; `npm start` runs it with --if-stale first (prestart), so `npm install &&
// npm start` serves a built dashboard. Vite and React are dependencies, not dev dependencies, so a
// production install (`npm ci --omit=dev && npm run build`) builds it too; nothing builds at install
// time. Without Vite (an image that copied the built files and left the build tools out) it says so
// and exits 0.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, gzipSync, constants as zlibConstants } from 'node:zlib';

const REPO = fileURLToPath(new URL('..', import.meta.url));
export const DASHBOARD_SOURCE = join(REPO, 'web', 'dashboard');
export const DASHBOARD_OUT = join(REPO, 'web', 'dist', 'dashboard');
const STAMP = join(DASHBOARD_OUT, '.build-stamp');
const COMPRESSIBLE = /\.(html|js|css|svg|json|txt)$/;

export interface BuildResult {
  built: boolean;
  message: string;
  files: { path: string; bytes: number; gzip: number; brotli: number }[];
}

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listFiles(path));
    else if (entry.isFile()) out.push(path);
  }
  return out.sort();
}

function packageVersion(name: string): string {
  try {
    const text = readFileSync(join(REPO, 'node_modules', name, 'package.json'), 'utf8');
    return (JSON.parse(text) as { version?: string }).version ?? '?';
  } catch {
    return 'missing';
  }
}

/** A hash of everything the build depends on: the sources and the versions of the tools and libraries. */
function sourceFingerprint(): string {
  const hash = createHash('sha256');
  for (const file of listFiles(DASHBOARD_SOURCE)) {
    hash.update(relative(DASHBOARD_SOURCE, file)).update('\0').update(readFileSync(file)).update('\0');
  }
  for (const name of ['vite', 'react', 'react-dom']) hash.update(`${name}@${packageVersion(name)}\0`);
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  return hash.digest('hex');
}

/** Whether Vite (a dev dependency) is installed; a broken install is an error, not a skip. */
async function viteAvailable(): Promise<boolean> {
  try {
    await import('vite');
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND') return false;
    throw error;
  }
}

function precompress(): BuildResult['files'] {
  const files: BuildResult['files'] = [];
  for (const path of listFiles(DASHBOARD_OUT)) {
    if (!COMPRESSIBLE.test(path)) continue;
    const body = readFileSync(path);
    const gzip = gzipSync(body, { level: 9 });
    const brotli = brotliCompressSync(body, {
      params: {
        [zlibConstants.BROTLI_PARAM_QUALITY]: 11,
        [zlibConstants.BROTLI_PARAM_SIZE_HINT]: body.length,
      },
    });
    writeFileSync(`${path}.gz`, gzip);
    writeFileSync(`${path}.br`, brotli);
    files.push({
      path: relative(DASHBOARD_OUT, path),
      bytes: body.length,
      gzip: gzip.length,
      brotli: brotli.length,
    });
  }
  return files;
}

export async function buildDashboard(options: { ifStale?: boolean } = {}): Promise<BuildResult> {
  const fingerprint = sourceFingerprint();
  if (options.ifStale && existsSync(STAMP) && existsSync(join(DASHBOARD_OUT, 'index.html'))) {
    if (readFileSync(STAMP, 'utf8').trim() === fingerprint) {
      return { built: false, files: [], message: 'kassa: dashboard is up to date (web/dist/dashboard).' };
    }
  }
  if (!(await viteAvailable())) {
    return {
      built: false,
      files: [],
      message:
        'kassa: dashboard not built: Vite is not installed. ' +
        '/dashboard/ shows a notice until `npm run build` runs.',
    };
  }
  const { build } = await import('vite');
  const started = performance.now();
  await build({ configFile: join(DASHBOARD_SOURCE, 'vite.config.ts'), mode: 'production' });
  const files = precompress();
  writeFileSync(STAMP, `${fingerprint}\n`);
  const ms = Math.round(performance.now() - started);
  const js = files.filter((file) => file.path.endsWith('.js'));
  const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
  const total = (key: 'bytes' | 'gzip' | 'brotli') => js.reduce((sum, file) => sum + file[key], 0);
  return {
    built: true,
    files,
    message:
      `kassa: dashboard built in ${ms} ms → web/dist/dashboard ` +
      `(JS ${kb(total('bytes'))}, ${kb(total('gzip'))} gzip, ${kb(total('brotli'))} brotli)`,
  };
}

if (import.meta.main) {
  const ifStale = process.argv.includes('--if-stale');
  try {
    const result = await buildDashboard({ ifStale });
    console.log(result.message);
  } catch (error) {
    console.error('kassa: the dashboard build failed:');
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  }
}
