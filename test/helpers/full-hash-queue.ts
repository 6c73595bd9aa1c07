// Preloaded into a `kassa` child process (NODE_OPTIONS=--import, see fullHashQueueEnv in cli.ts): takes
// every place of that process's password-hash queue (lib/crypto.ts) with hashes that never end, as a
// flood of slow hashes would, so the command's own hash is refused. The CLI imports the same module, so
// it finds this queue full.
import { hashQueue } from '../../src/lib/crypto.ts';

for (let place = 0; place < hashQueue.concurrency + hashQueue.maxWaiting; place++) {
  // Never settles, and keeps nothing alive: the process exits when the command is done.
  void hashQueue.run(null, () => new Promise<never>(() => {}));
}
