// A bounded queue for password hashing. Each scrypt holds 16 MiB and a libuv thread for ~100 ms, so only
// `concurrency` run at once; the rest wait in line. The line is bounded twice: in all (`maxWaiting`) and per
// key (`maxPerKey`, the client's address, counting its running and waiting hashes), and admission is decided
// synchronously when the work is offered. A flood therefore gets refusals at once instead of a queue that
// grows without end and delays every real login behind it; one address cannot fill the line for others.

export class HashQueueFullError extends Error {
  /** `key`: this key already has its share in line; `all`: the line itself is full. */
  readonly scope: 'key' | 'all';
  constructor(scope: 'key' | 'all') {
    super(scope === 'key' ? 'Too many password checks in progress for this key.' : 'The hash queue is full.');
    this.scope = scope;
  }
}

export class HashQueue {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly perKey = new Map<string, number>();
  /** Hashes finished, and offers refused by bound, since the process started (exported at /metrics). */
  completed = 0;
  readonly refused = { key: 0, all: 0 };
  readonly concurrency: number;
  readonly maxWaiting: number;
  readonly maxPerKey: number;

  constructor(concurrency: number, maxWaiting: number, maxPerKey: number) {
    this.concurrency = concurrency;
    this.maxWaiting = maxWaiting;
    this.maxPerKey = maxPerKey;
  }

  /** How many hashes are running and waiting (for metrics and tests). */
  get size(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting.length };
  }

  /**
   * Runs `work` when a slot is free. Refuses at once (a rejected promise, before any waiting) when `key`
   * already holds `maxPerKey` places, or when every slot is busy and `maxWaiting` are already in line.
   */
  async run<T>(key: string | null, work: () => Promise<T>): Promise<T> {
    const held = key === null ? 0 : (this.perKey.get(key) ?? 0);
    if (key !== null && held >= this.maxPerKey) {
      this.refused.key++;
      throw new HashQueueFullError('key');
    }
    const mustWait = this.running >= this.concurrency;
    if (mustWait && this.waiting.length >= this.maxWaiting) {
      this.refused.all++;
      throw new HashQueueFullError('all');
    }
    if (key !== null) this.perKey.set(key, held + 1);
    if (mustWait) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.running++;
    try {
      return await work();
    } finally {
      this.completed++;
      if (key !== null) {
        const left = (this.perKey.get(key) ?? 1) - 1;
        if (left > 0) this.perKey.set(key, left);
        else this.perKey.delete(key);
      }
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}
