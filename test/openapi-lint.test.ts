// The OpenAPI document passes the linters its users run: Redocly's `recommended` (redocly.yaml) and
// Spectral's `spectral:oas` (.spectral.yaml), with 0 errors and 0 warnings. The rules turned off are in
// those files, each with its reason. Both CLIs run on the document the real server answers.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { DB_KIND, startTestServer } from './helpers/server.ts';

const run = promisify(execFile);
const ROOT = new URL('..', import.meta.url).pathname;

/** Runs a CLI from node_modules on this Node; a non-zero exit still hands back what it printed. */
async function cli(script: string, args: string[]): Promise<string> {
  try {
    const { stdout } = await run(process.execPath, [join(ROOT, script), ...args], {
      cwd: ROOT,
      maxBuffer: 64 * 1024 * 1024,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    return stdout;
  } catch (error) {
    // Both exit 1 when they found problems: the report says which.
    const { code, stdout, stderr } = error as { code?: unknown; stdout?: string; stderr?: string };
    if (code === 1) return stdout ?? '';
    throw new Error(`${script} failed: ${stderr}`);
  }
}

describe(`the OpenAPI document under the linters (${DB_KIND})`, () => {
  let dir: string;
  let file: string;

  before(async () => {
    const server = await startTestServer({ worker: false });
    try {
      const response = await fetch(`${server.url}/api/openapi.json`);
      dir = mkdtempSync(join(tmpdir(), 'kassa-openapi-'));
      file = join(dir, 'openapi.json');
      writeFileSync(file, await response.text());
    } finally {
      await server.close();
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('Redocly recommended: 0 errors, 0 warnings', async () => {
    const output = await cli('node_modules/@redocly/cli/bin/cli.js', [
      'lint',
      file,
      '--config',
      join(ROOT, 'redocly.yaml'),
      '--format',
      'json',
      '--max-problems',
      '1000',
    ]);
    const report = JSON.parse(output) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string }[];
    };
    const problems = report.problems.map((problem) => `${problem.ruleId}: ${problem.message}`);
    assert.deepEqual(problems, []);
    assert.deepEqual(report.totals, { ...report.totals, errors: 0, warnings: 0 });
  });

  test('Spectral spectral:oas: 0 errors, 0 warnings', async () => {
    // Spectral prints a sentence after the JSON when there is nothing to report: the file has the JSON only.
    const output = join(dir, 'spectral.json');
    await cli('node_modules/@stoplight/spectral-cli/dist/index.js', [
      'lint',
      file,
      '--ruleset',
      join(ROOT, '.spectral.yaml'),
      '--format',
      'json',
      '--output',
      output,
      '--fail-severity',
      'hint',
    ]);
    const results = JSON.parse(readFileSync(output, 'utf8')) as {
      code: string;
      message: string;
      path: string[];
    }[];
    assert.deepEqual(
      results.map((result) => `${result.code}: ${result.message} at ${result.path.join('.')}`),
      [],
    );
  });
});
