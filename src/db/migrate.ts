// Forward-only migrations, run at start-up and by `kassa migrate`. One list for both databases;
// the few type differences (identity columns) are decided by the dialect passed in.
import { type Kysely, type Migration, Migrator, sql } from 'kysely';
import type { DatabaseKind } from '../config.ts';
import type { Database } from './database.ts';
import { migrations } from './migrations/index.ts';

export async function migrateToLatest(db: Kysely<Database>, kind: DatabaseKind): Promise<string[]> {
  const list = migrations(kind);
  // Kysely looks for its migration tables in every schema unless told which one: with several schemas
  // in one PostgreSQL database (parallel test files), it would find another schema's and skip its own.
  const migrationTableSchema =
    kind === 'postgres'
      ? (await sql<{ schema: string }>`select current_schema() as schema`.execute(db)).rows[0]?.schema
      : undefined;
  const migrator = new Migrator({
    db,
    migrationTableSchema,
    provider: { getMigrations: async (): Promise<Record<string, Migration>> => list },
  });
  let { error, results } = await migrator.migrateToLatest();
  // Kysely's table check scans every schema; one dropped meanwhile by another process (parallel test
  // files, each in its own schema) fails that scan. Nothing was applied then, so trying again is safe.
  for (let retry = 0; retry < 5 && isOtherSchemaDropped(error, migrationTableSchema); retry += 1) {
    ({ error, results } = await migrator.migrateToLatest());
  }
  if (error) {
    const failed = results?.find((result) => result.status === 'Error');
    throw new Error(
      `Migration ${failed?.migrationName ?? ''} failed: ${(error as Error).message ?? String(error)}`,
    );
  }
  return (results ?? []).map((result) => result.migrationName);
}

function isOtherSchemaDropped(error: unknown, ownSchema: string | undefined): boolean {
  const match = error instanceof Error ? /^schema "([^"]+)" does not exist$/.exec(error.message) : null;
  return match !== null && match[1] !== ownSchema;
}
