// Calling the provider for an operation already recorded (store.ts): bounded by KASSA_PROVIDER_TIMEOUT_MS,
// and any failure to get an answer (a timeout, a 5xx, a dropped connection) becomes the `unknown` outcome
// rather than an error, because the provider may have acted. The tests' crash points sit on each side of
// the call (KASSA_TEST_CRASH_AT, honoured only with KASSA_ENV=test).
import type { Config } from '../../config.ts';
import type { OperationRow } from './table.ts';

export type CallResult<T> = { answered: true; value: T } | { answered: false; reason: string };

/** SIGKILL, at once: what a crash of the machine looks like to the database and to the provider. */
function crash(point: NonNullable<Config['testCrashAt']>): Promise<never> {
  process.stderr.write(`kassa: test crash at ${point}\n`);
  process.kill(process.pid, 'SIGKILL');
  return new Promise<never>(() => {});
}

function timeout(ms: number): { promise: Promise<never>; clear: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return { promise, clear: () => clearTimeout(timer) };
}

export async function callProvider<T>(
  config: Pick<Config, 'providerTimeoutMs' | 'testCrashAt'>,
  operation: Pick<OperationRow, 'idempotency_key'>,
  call: () => Promise<T>,
): Promise<CallResult<T>> {
  if (config.testCrashAt === 'operation-recorded') await crash(config.testCrashAt);
  const limit = timeout(config.providerTimeoutMs);
  let result: CallResult<T>;
  try {
    result = { answered: true, value: await Promise.race([call(), limit.promise]) };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    result = { answered: false, reason: `${operation.idempotency_key}: ${reason}` };
  } finally {
    limit.clear();
  }
  if (config.testCrashAt === 'provider-answered' && result.answered) await crash(config.testCrashAt);
  return result;
}
