// The commands of `kassa`. Each is a small function over the same services the API uses.
// The server is imported only by the commands that run it, so `--help`, `migrate` and
// `merchant create` start quickly.
import type { ParseArgsOptionsConfig } from 'node:util';
import type { Config } from '../config.ts';
import { openAndMigrate } from '../db/connection.ts';
import { providerWarnings } from '../provider/startup.ts';
import { backupCommand } from './backup.ts';
import { demoCommand } from './demo.ts';
import { doctorCommand } from './doctor.ts';
import { listenCommand } from './listen.ts';
import { merchantCreateCommand } from './merchant.ts';
import { operationCommands } from './operation.ts';
import { orgCommands } from './org.ts';
import { payoutCommands } from './payout.ts';
import { refundCommands } from './refund.ts';
import { renewalCommands } from './renewal.ts';

export interface CommandInput {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
  config: () => Config;
}

export interface Command {
  summary: string;
  usage: string;
  help: string;
  options: ParseArgsOptionsConfig;
  run(input: CommandInput): Promise<number>;
}

function warnAboutProviders(config: Config): void {
  for (const warning of providerWarnings(config)) console.error(`kassa: warning: ${warning}`);
}

/** Runs until SIGTERM or SIGINT, then closes gracefully: in-flight requests finish, loops stop. */
async function runUntilSignal(close: () => Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    const stop = (signal: string) => {
      console.error(`kassa: ${signal} received, shutting down`);
      const force = setTimeout(() => resolve(1), 10_000);
      force.unref();
      close().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

export const commands: Record<string, Command> = {
  serve: {
    summary: 'Run the API and the background worker (the default of npm start).',
    usage: '[--no-worker]',
    help: 'Options:\n  --no-worker    run the API only (start workers with "kassa worker")',
    options: { 'no-worker': { type: 'boolean' } },
    async run({ values, config }) {
      const { startService } = await import('../server.ts');
      const service = await startService(config(), { worker: values['no-worker'] ? false : undefined });
      warnAboutProviders(service.ctx.config);
      console.error(`kassa: listening on ${service.url}`);
      return runUntilSignal(() => service.close());
    },
  },
  worker: {
    summary: 'Run only the background worker (outbox, webhook deliveries, provider sync, reserve release).',
    usage: '',
    help: 'Any number of workers may run against one PostgreSQL database.',
    options: {},
    async run({ config }) {
      const { startService } = await import('../server.ts');
      const service = await startService(config(), { http: false, worker: true });
      warnAboutProviders(service.ctx.config);
      console.error('kassa: worker running');
      return runUntilSignal(() => service.close());
    },
  },
  migrate: {
    summary: 'Apply database migrations and exit (they also run at start-up).',
    usage: '',
    help: 'Uses DATABASE_URL, or the SQLite file under KASSA_DATA_DIR.',
    options: {},
    async run({ config }) {
      const handle = await openAndMigrate(config().database);
      await handle.close();
      console.log(handle.applied.length ? `applied: ${handle.applied.join(', ')}` : 'database is up to date');
      return 0;
    },
  },
  'merchant create': merchantCreateCommand,
  demo: demoCommand,
  backup: backupCommand,
  ...orgCommands,
  ...payoutCommands,
  ...refundCommands,
  ...renewalCommands,
  ...operationCommands,
  listen: listenCommand,
  doctor: doctorCommand,
};
