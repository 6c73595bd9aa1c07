// A batch of rows, or of ids, sent to the database as one JSON parameter and read back as a table, so
// that a statement over a batch has the same SQL whatever its size: PostgreSQL parses and plans it once
// per connection (it goes by name, prepared.ts), SQLite keeps one compiled statement, and Kysely builds
// a handful of nodes instead of one per value (the webhook worker's outcomes: 23 values per delivery,
// 256 deliveries a flush). Each row goes as an array of its values in the order of the columns, read
// by position: jsonb_array_elements on PostgreSQL, json_each on SQLite, both in the array's order.
import { type RawBuilder, sql } from 'kysely';
import { isPostgres } from './connection.ts';
import type { Executor } from './database.ts';

/** The SQL type each column is read as. */
export type JsonColumnType = 'text' | 'bigint' | 'integer';

/**
 * A lone surrogate as U+FFFD, as a parameter of its own is sent (UTF-8 has no lone surrogates):
 * JSON.stringify writes it as an escape, which PostgreSQL's JSON refuses, failing the statement.
 */
function wellFormed(value: string | number | null): string | number | null {
  return typeof value === 'string' ? value.toWellFormed() : value;
}

type JsonColumns<Row> = { [Column in keyof Row & string]: JsonColumnType };

/**
 * `select <columns> from <the rows of json>`: the columns in the order given, null where a row has none,
 * the rows in the order given (ordered by their position: an insert takes its rows' locks in that order).
 */
export function jsonRows<Row extends Record<string, string | number | null>>(
  db: Executor,
  rows: Row[],
  columns: JsonColumns<Row>,
): RawBuilder<Row> {
  return jsonTable(db, jsonParameter(rows, columns), columns);
}

/** The one parameter jsonTable reads `rows` from: each row as an array of its values, in column order. */
export function jsonParameter<Row extends Record<string, string | number | null>>(
  rows: Row[],
  columns: JsonColumns<Row>,
): string {
  const names = Object.keys(columns) as (keyof Row & string)[];
  return JSON.stringify(rows.map((row) => names.map((name) => wellFormed(row[name]))));
}

/**
 * jsonRows over a parameter jsonParameter made: for a prepared query (prepared.ts), which takes the
 * parameter as one of its arguments.
 */
export function jsonTable<Row extends Record<string, string | number | null>>(
  db: Executor,
  json: string,
  columns: JsonColumns<Row>,
): RawBuilder<Row> {
  const names = Object.keys(columns) as (keyof Row & string)[];
  if (isPostgres(db)) {
    // Arrays, not objects: each row's values in the order of `columns`, read by position. As jsonb,
    // parsed once: `->>` on json text parses the row again up to the value at each read (a flush of
    // 256 outcomes of 18 columns: 4.5-9.6 ms of the statement against 0.7-0.9 ms as jsonb).
    const read = names.map(
      (name, index) => sql`(r.value->>${sql.lit(index)})::${sql.raw(columns[name])} as ${sql.ref(name)}`,
    );
    return sql<Row>`select ${sql.join(read)} from jsonb_array_elements(${json}::jsonb) with ordinality as r(value, n) order by r.n`;
  }
  const read = names.map(
    (name, index) => sql`json_extract(r.value, ${sql.lit(`$[${index}]`)}) as ${sql.ref(name)}`,
  );
  // `where true`: an INSERT … SELECT followed by ON CONFLICT needs it to parse on SQLite.
  return sql<Row>`select ${sql.join(read)} from json_each(${json}) as r where true order by r.key`;
}

/** `(select … from <the ids of json>)`, the right side of `id in …` over a batch of ids. */
export function jsonIds(db: Executor, ids: number[]): RawBuilder<number> {
  const json = JSON.stringify(ids);
  return isPostgres(db)
    ? sql<number>`(select value::bigint from json_array_elements_text(${json}::json))`
    : sql<number>`(select value from json_each(${json}))`;
}
