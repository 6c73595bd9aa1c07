// The shape of an operator command that reads or changes the database and answers with JSON.
import type { Config } from '../config.ts';
import { type DbHandle, openAndMigrate } from '../db/connection.ts';

/** Opens the database (migrated), prints what `work` returns as JSON, and closes it; exit code 0. */
export async function printFromDatabase(
  config: Config,
  work: (handle: DbHandle) => Promise<unknown>,
): Promise<number> {
  const handle = await openAndMigrate(config.database);
  try {
    console.log(JSON.stringify(await work(handle)));
    return 0;
  } finally {
    await handle.close();
  }
}
