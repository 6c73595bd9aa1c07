// npm run test:mutation [-- <part of a file name> ...]: StrykerJS over the money core and the other
// modules whose rules are pure (scripts/mutation.config.ts). Each file gets a Stryker run of its own
// with the command runner, so each of its mutants runs only that file's fast unit tests, on Node's type
// stripping (no build). Prints the score per file and exits 1 when any file is under the threshold.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import type { LogLevel, MutantResult } from '@stryker-mutator/api/core';
import { Stryker } from '@stryker-mutator/core';
import {
  EQUIVALENT,
  type EquivalentMutant,
  type MutationTarget,
  TARGETS,
  THRESHOLD,
} from './mutation.config.ts';

const ROOT = new URL('..', import.meta.url).pathname;
const only = process.argv.slice(2);
const targets = TARGETS.filter(
  (target) => only.length === 0 || only.some((part) => target.file.includes(part)),
);
const concurrency = Number(process.env.KASSA_MUTATION_CONCURRENCY) || 2;

interface FileScore {
  file: string;
  killed: number;
  survived: MutantResult[];
  equivalent: number;
  invalid: number;
  seconds: number;
}

function lineOf(source: string, mutant: MutantResult): string {
  return source.split('\n')[mutant.location.start.line - 1] ?? '';
}

function isEquivalent(source: string, mutant: MutantResult, mark: EquivalentMutant): boolean {
  return (
    mark.mutator === mutant.mutatorName &&
    mark.replacement === mutant.replacement &&
    lineOf(source, mutant).includes(mark.line)
  );
}

async function mutate(target: MutationTarget, used: Set<EquivalentMutant>): Promise<FileScore> {
  const started = Date.now();
  const stryker = new Stryker({
    testRunner: 'command',
    commandRunner: {
      command: `"${process.execPath}" --disable-warning=ExperimentalWarning --test --test-reporter=dot ${target.tests.join(' ')}`,
    },
    mutate: [target.file],
    coverageAnalysis: 'off',
    concurrency,
    // Only what the unit tests load goes into the sandbox (node_modules is linked, not copied).
    ignorePatterns: ['/*', '!/src', '!/package.json', '!/tsconfig.json'],
    tempDirName: '.stryker-tmp',
    cleanTempDir: 'always',
    reporters: ['dots'],
    logLevel: 'warn' as LogLevel,
    timeoutMS: 15_000,
  });
  const results = await stryker.runMutationTest();
  const source = readFileSync(target.file, 'utf8');
  const score: FileScore = {
    file: target.file,
    killed: 0,
    survived: [],
    equivalent: 0,
    invalid: 0,
    seconds: 0,
  };
  for (const mutant of results) {
    switch (mutant.status) {
      case 'Killed':
      case 'Timeout':
        score.killed += 1;
        break;
      case 'Survived':
      case 'NoCoverage': {
        const mark = EQUIVALENT.find(
          (candidate) => candidate.file === target.file && isEquivalent(source, mutant, candidate),
        );
        if (mark) {
          used.add(mark);
          score.equivalent += 1;
        } else score.survived.push(mutant);
        break;
      }
      default:
        score.invalid += 1; // CompileError, RuntimeError, Ignored: not a mutant the tests could judge
    }
  }
  score.seconds = Math.round((Date.now() - started) / 1000);
  return score;
}

function percent(score: FileScore): number {
  const valid = score.killed + score.survived.length;
  return valid === 0 ? 100 : (100 * score.killed) / valid;
}

const used = new Set<EquivalentMutant>();
const scores: FileScore[] = [];
for (const target of targets) scores.push(await mutate(target, used));

console.log(`\nMutation scores (threshold ${THRESHOLD} %, ${concurrency} at once):\n`);
console.log('| file | score | killed | survived | equivalent | time |');
console.log('|---|---|---|---|---|---|');
for (const score of scores) {
  const valid = score.killed + score.survived.length;
  console.log(
    `| ${score.file} | ${percent(score).toFixed(1)} % | ${score.killed}/${valid} | ${score.survived.length} | ${score.equivalent} | ${score.seconds} s |`,
  );
}
let failed = false;
for (const score of scores) {
  if (score.survived.length === 0) continue;
  const source = readFileSync(score.file, 'utf8');
  console.log(`\nSurvivors in ${score.file}:`);
  for (const mutant of score.survived) {
    console.log(
      `  ${relative(ROOT, `${ROOT}${score.file}`)}:${mutant.location.start.line} ${mutant.mutatorName}: ${JSON.stringify(mutant.replacement)}  (line: ${lineOf(source, mutant).trim()})`,
    );
  }
}
for (const score of scores) {
  if (percent(score) < THRESHOLD) {
    console.error(`FAIL ${score.file}: ${percent(score).toFixed(1)} % is under ${THRESHOLD} %`);
    failed = true;
  }
}
for (const mark of EQUIVALENT) {
  if (targets.some((target) => target.file === mark.file) && !used.has(mark)) {
    console.error(
      `FAIL stale equivalence in scripts/mutation.config.ts: ${mark.file} ${mark.mutator} ${mark.replacement} (${mark.line})`,
    );
    failed = true;
  }
}
process.exitCode = failed ? 1 : 0;
