import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AppContext } from '../context.ts';
import { startWorker, type Wake, type WorkerLoop } from './runner.ts';

const ctx = {} as AppContext;
const LONG_MS = 60_000;

/** A loop that sleeps LONG_MS when idle; `runs` counts its runs, `wake` wakes it, `during` runs inside run. */
function probe(during: (run: number) => Promise<void> | void = () => {}) {
  const state = { runs: 0, wake: (() => {}) as Wake, ranAt: [] as number[] };
  const loop: WorkerLoop = {
    name: 'probe',
    intervalMs: () => LONG_MS,
    subscribe: (_ctx, wake) => {
      state.wake = wake;
      return () => {};
    },
    run: async () => {
      state.runs++;
      state.ranAt.push(Date.now());
      await during(state.runs);
      return 0;
    },
  };
  return { state, loop };
}

const until = async (check: () => boolean, ms = 2000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
};

test('a sleeping loop that is woken runs at once, not after its interval', async () => {
  const { state, loop } = probe();
  const worker = startWorker(ctx, [loop], () => {});
  try {
    await until(() => state.runs === 1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    state.wake();
    await until(() => state.runs === 2, 500);
  } finally {
    await worker.stop();
  }
});

test('a wake-up that arrives while the loop runs makes it run again right after (it is not lost)', async () => {
  let release: () => void = () => {};
  const { state, loop } = probe((run) => {
    if (run !== 1) return;
    // The signal comes while the first run is still reading: after it, the loop must not sleep.
    state.wake();
    return new Promise<void>((resolve) => {
      release = resolve;
    });
  });
  const worker = startWorker(ctx, [loop], () => {});
  try {
    await until(() => state.runs === 1);
    release();
    await until(() => state.runs === 2, 500);
  } finally {
    await worker.stop();
  }
});

test('a wake-up for later shortens the sleep to that time, not to now', async () => {
  const { state, loop } = probe();
  const worker = startWorker(ctx, [loop], () => {});
  try {
    await until(() => state.runs === 1);
    const asked = Date.now();
    state.wake(200);
    state.wake(5000);
    await until(() => state.runs === 2, 1000);
    assert.ok(state.ranAt[1] - asked >= 195, `ran after ${state.ranAt[1] - asked} ms`);
  } finally {
    await worker.stop();
  }
});

test('stop ends the sleeps and calls what the loops subscribed', async () => {
  let unsubscribed = false;
  const loop: WorkerLoop = {
    name: 'idle',
    intervalMs: () => LONG_MS,
    subscribe: () => () => {
      unsubscribed = true;
    },
    run: async () => 0,
  };
  const worker = startWorker(ctx, [loop], () => {});
  await new Promise((resolve) => setTimeout(resolve, 20));
  const started = Date.now();
  await worker.stop();
  assert.ok(Date.now() - started < 1000);
  assert.ok(unsubscribed);
});

test("what a loop's subscription reports failing is reported as the loop's error", async () => {
  const errors: [string, unknown][] = [];
  let report: (error: unknown) => void = () => {};
  const loop: WorkerLoop = {
    name: 'listening',
    intervalMs: () => LONG_MS,
    subscribe: (_ctx, _wake, onError) => {
      report = onError;
      return () => {};
    },
    run: async () => 0,
  };
  const worker = startWorker(ctx, [loop], (name, error) => errors.push([name, error]));
  try {
    const lost = new Error('the LISTEN connection was lost');
    report(lost);
    assert.deepEqual(errors, [['listening', lost]]);
  } finally {
    await worker.stop();
  }
});
