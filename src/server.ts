// Starts the service from a configuration: database, migrations, HTTP, worker; and stops it gracefully.

import { buildApp } from './app.ts';
import { type Config, ConfigError } from './config.ts';
import { type AppContext, createContext } from './context.ts';
import { type DbHandle, openAndMigrate } from './db/connection.ts';
import type { App } from './http/types.ts';
import { assertProvidersStartable } from './provider/startup.ts';
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

/** Listens, turning a taken or forbidden port into one line that names it and the variable to change. */
async function listen(app: App, config: Config): Promise<string> {
  let url: string;
  try {
    url = await app.listen({ host: config.host, port: config.port });
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'EADDRINUSE' || code === 'EACCES') {
      const problem = code === 'EADDRINUSE' ? 'is already in use' : 'may not be used by this user';
      throw new ConfigError(
        `port ${config.port} on ${config.host} ${problem}: set ${config.portVariable} to another port.`,
      );
    }
    throw error;
  }
  // Port 0 asks for any free port: links and checkout URLs must name the one the server got.
  const address = app.server.address();
  if (!config.publicUrlExplicit && config.port === 0 && address && typeof address === 'object') {
    config.publicUrl = `http://localhost:${address.port}`;
  }
  return url;
}

export async function startService(config: Config, options: StartOptions = {}): Promise<Service> {
  assertProvidersStartable(config);
  const handle: DbHandle = await openAndMigrate(config.database);
  const ctx = createContext(config, handle, options.clock);
  let app: App | null = null;
  let url: string | null = null;
  let worker: WorkerHandle | null = null;
  try {
    if (options.http !== false) {
      app = await buildApp(ctx);
      url = await listen(app, config);
    }
    if (config.webhookAllowPrivate) {
      const warning =
        'KASSA_WEBHOOK_ALLOW_PRIVATE is set: webhooks may be sent to loopback and private addresses (the SSRF guard is off). Use it for development only.';
      if (app) app.log.warn(warning);
      else console.error(`kassa: warning: ${warning}`);
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
