// Starts the service from a configuration: database, migrations, HTTP, worker; and stops it gracefully.

import { buildApp } from './app.ts';
import type { Config } from './config.ts';
import { type AppContext, createContext } from './context.ts';
import { type DbHandle, openAndMigrate } from './db/connection.ts';
import type { App } from './http/types.ts';
import { workerLoops } from './worker/loops.ts';
import { startWorker, type WorkerHandle } from './worker/runner.ts';

export interface Service {
  ctx: AppContext;
  app: App | null;
  url: string | null;
  close(): Promise<void>;
}

export interface StartOptions {
  http?: boolean;
  worker?: boolean;
  clock?: AppContext['clock'];
}

export async function startService(config: Config, options: StartOptions = {}): Promise<Service> {
  const handle: DbHandle = await openAndMigrate(config.database);
  const ctx = createContext(config, handle, options.clock);
  let app: App | null = null;
  let url: string | null = null;
  let worker: WorkerHandle | null = null;
  try {
    if (options.http !== false) {
      app = await buildApp(ctx);
      url = await app.listen({ host: config.host, port: config.port });
    }
    if (options.worker ?? config.workerEnabled) {
      const log = app?.log;
      worker = startWorker(ctx, workerLoops, (loop, error) => {
        if (log) log.error({ err: error, loop }, 'worker loop failed');
        else console.error(`worker loop ${loop} failed:`, error);
      });
    }
  } catch (error) {
    await app?.close();
    await handle.close();
    throw error;
  }
  let closing: Promise<void> | null = null;
  return {
    ctx,
    app,
    url,
    close() {
      closing ??= (async () => {
        await worker?.stop();
        await app?.close();
        await handle.close();
      })();
      return closing;
    },
  };
}
