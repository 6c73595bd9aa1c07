// What every module needs at run time, built once when the service starts and passed down.
import type { Kysely } from 'kysely';
import type { Config, DatabaseKind } from './config.ts';
import type { DbHandle } from './db/connection.ts';
import type { Database } from './db/database.ts';

export type Clock = () => Date;

export interface AppContext {
  config: Config;
  db: Kysely<Database>;
  dbKind: DatabaseKind;
  clock: Clock;
}

export function createContext(config: Config, handle: DbHandle, clock: Clock = () => new Date()): AppContext {
  return { config, db: handle.db, dbKind: handle.kind, clock };
}
