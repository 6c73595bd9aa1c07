// What every module needs at run time, built once when the service starts and passed down.
import type { Kysely } from 'kysely';
import type { Config, DatabaseKind } from './config.ts';
import type { DbHandle } from './db/connection.ts';
import type { Database } from './db/database.ts';
import type { OutboxSignal } from './db/outbox-signal.ts';
import { createMailer, type Mailer } from './mail/mailer.ts';
import { createProviders, type Providers } from './provider/index.ts';

export type Clock = () => Date;

export interface AppContext {
  config: Config;
  db: Kysely<Database>;
  dbKind: DatabaseKind;
  /** Signalled after this process commits events or deliveries (the webhook worker wakes on it). */
  outbox: OutboxSignal;
  clock: Clock;
  providers: Providers;
  mailer: Mailer;
}

export function createContext(config: Config, handle: DbHandle, clock: Clock = () => new Date()): AppContext {
  const ctx: AppContext = {
    config,
    db: handle.db,
    dbKind: handle.kind,
    outbox: handle.outbox,
    clock,
    // The provider reads the clock through the context, so a test that swaps ctx.clock moves both.
    providers: createProviders(config, handle.db, () => ctx.clock()),
    mailer: createMailer(config),
  };
  return ctx;
}
