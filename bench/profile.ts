// Summarises a V8 CPU profile (node --cpu-prof): the functions with the most self time, and the time
// per package or source folder. `node bench/profile.ts <file.cpuprofile> [top]` prints it.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Where a frame's code lives: a package (`fastify`), a source folder (`src/modules/checkout`), or V8. */
function origin(url: string, functionName: string): string {
  const packaged = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packaged) return packaged[1];
  const source = /\/((?:src|bench)\/(?:modules\/)?[^/]+)/.exec(url);
  if (source) return source[1];
  if (url.startsWith('node:')) return url.split('/').slice(0, 2).join('/');
  return url || functionName;
}

function shortUrl(url: string): string {
  return url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|bench)\//, '$1/');
}

export function summarizeProfile(file: string, top = 20): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => {
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  let total = 0;
  let idle = 0;
  const byFunction = new Map<string, number>();
  const byOrigin = new Map<string, number>();
  for (const [id, micros] of self) {
    const frame = byId.get(id)?.callFrame;
    if (!frame) continue;
    total += micros;
    if (frame.functionName === '(idle)') {
      idle += micros;
      continue;
    }
    const name = `${frame.functionName || '(anonymous)'}  ${shortUrl(frame.url)}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
    const where = origin(frame.url, frame.functionName);
    byOrigin.set(where, (byOrigin.get(where) ?? 0) + micros);
  }
  const busy = total - idle;
  const lines = (map: Map<string, number>, count: number) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(
        ([name, micros]) =>
          `  ${(micros / 1000).toFixed(0).padStart(7)} ms ${((100 * micros) / busy).toFixed(1).padStart(5)} %  ${name}`,
      )
      .join('\n');
  return [
    `busy ${(busy / 1e6).toFixed(1)} s of ${(total / 1e6).toFixed(1)} s profiled (self time, % of busy)`,
    'top functions:',
    lines(byFunction, top),
    'by package / source folder:',
    lines(byOrigin, 15),
  ].join('\n');
}

if (process.argv[2]) console.log(summarizeProfile(process.argv[2], Number(process.argv[3]) || 20));
