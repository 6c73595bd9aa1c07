// #14 finding 10: the pinned Node was 24.9.0 while the registry had long since shipped security releases.
// This fails when the pin falls more than one minor release behind the newest 24.x the registry has.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

function minorOf(version: string): number {
  const match = /^24\.(\d+)\.\d+$/.exec(version);
  assert.ok(match, `not a 24.x version: ${version}`);
  return Number(match[1]);
}

test('the pinned Node 24 is at most one minor release behind the newest on the registry', () => {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  const pinned: string = manifest.devDependencies.node;
  // Fails loudly rather than skipping when the registry cannot be asked: CI reaches it (npm install).
  const answer = execFileSync('npm', ['view', 'node@24', 'version', '--json'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const published: string[] = [JSON.parse(answer)].flat();
  const newest = Math.max(...published.map(minorOf));
  assert.ok(minorOf(pinned) >= newest - 1, `node ${pinned} is pinned; the registry has 24.${newest}.x`);
  assert.equal(process.version, `v${pinned}`, 'the suite runs on the pinned Node');
});
