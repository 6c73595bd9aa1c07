// Column helpers that keep one migration list valid on SQLite and PostgreSQL.
import type { CreateTableBuilder } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

/** Adds the numeric primary key: `integer primary key autoincrement` or `bigserial primary key`. */
export function withId<T extends string>(table: CreateTableBuilder<T, never>, kind: DatabaseKind) {
  return kind === 'postgres'
    ? table.addColumn('id', 'bigserial', (col) => col.primaryKey())
    : table.addColumn('id', 'integer', (col) => col.primaryKey().autoIncrement());
}
