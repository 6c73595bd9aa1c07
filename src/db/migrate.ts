// Forward-only migrations, run at start-up and by `kassa migrate`. One list for both databases;
// the few type differences (identity columns) are decided by the dialect passed in.
import { type Kysely, type Migration, Migrator } from 'kysely';
import type { DatabaseKind } from '../config.ts';
import type { Database } from './database.ts';
import { migrations } from './migrations/index.ts';

export async function migrateToLatest(db: Kysely<Database>, kind: DatabaseKind): Promise<string[]> {
  const list = migrations(kind);
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async (): Promise<Record<string, Migration>> => list },
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === 'Error');
    throw new Error(
      `Migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? String(error)}`,
    );
  }
  return (results ?? []).map((result) => result.migrationName);
}
