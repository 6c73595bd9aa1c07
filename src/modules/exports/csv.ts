// CSV for the dashboard's exports: RFC 4180 quoting, and cells a spreadsheet would run as a formula
// (starting with = + - @, a tab or a carriage return) made inert with a leading apostrophe, as OWASP
// advises. Plain numbers ("-3.00") are left as they are. Rows are streamed in keyset batches, so an
// export of any length holds one batch in memory.
import { Readable } from 'node:stream';
import { sql } from 'kysely';

export type Cell = string | number | null | undefined;

const PLAIN_NUMBER = /^-?\d+(\.\d+)?$/;
const FORMULA_START = /^[=+\-@\t\r]/;

export function csvCell(value: Cell): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (FORMULA_START.test(text) && !PLAIN_NUMBER.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvLine(cells: readonly Cell[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

/** Rows fetched per query. */
export const BATCH_SIZE = 1000;

export interface CsvSource<Row extends { id: number }> {
  header: readonly string[];
  /** The next rows after `last` (null: from the newest), newest first, at most BATCH_SIZE. */
  fetch(last: Row | null): Promise<Row[]>;
  /** The cells of a batch of rows (may read what the rows refer to, once per batch). */
  cells(rows: Row[]): Promise<Cell[][]> | Cell[][];
}

async function* csvChunks<Row extends { id: number }>(source: CsvSource<Row>): AsyncGenerator<string> {
  yield csvLine(source.header);
  let last: Row | null = null;
  for (;;) {
    const rows: Row[] = await source.fetch(last);
    if (rows.length === 0) return;
    yield (await source.cells(rows)).map(csvLine).join('');
    if (rows.length < BATCH_SIZE) return;
    last = rows[rows.length - 1];
  }
}

/** The CSV as a stream that reads the next batch only when the client has taken the last one. */
export function csvStream<Row extends { id: number }>(source: CsvSource<Row>): Readable {
  return Readable.from(csvChunks(source), { objectMode: false, highWaterMark: 64 * 1024 });
}

/**
 * Rows of `table` that come after `last` in the order created_at desc, id desc: the next batch's keyset.
 * The leading `created_at <=` lets the (organization, environment, created_at) index find the range.
 */
export function olderThan(table: string, last: { created_at: string; id: number }) {
  const createdAt = sql.ref(`${table}.created_at`);
  const id = sql.ref(`${table}.id`);
  return sql<boolean>`(${createdAt} <= ${last.created_at} and (${createdAt} < ${last.created_at} or ${id} < ${last.id}))`;
}
