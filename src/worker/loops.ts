// Every background loop of the service. `kassa serve` runs them beside the API; `kassa worker` alone.
import type { WorkerLoop } from './runner.ts';

export const workerLoops: WorkerLoop[] = [];
