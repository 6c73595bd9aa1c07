// The write buffer's rules and the one statement it makes (write-behind.ts), on SQL compiled for
// PostgreSQL; the flush against the real databases is test/write-behind.test.ts.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type CompiledQuery,
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  sql,
} from 'kysely';
import { placeholderPositions, WriteBuffer } from './write-behind.ts';

interface Tables {
  items: { id: number; label: string; amount: number };
  notes: { id: number; item_id: number; text: string };
  audit: { id: number; text: string };
}

const db = new Kysely<Tables>({
  dialect: {
    createAdapter: () => new PostgresAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (kysely) => new PostgresIntrospector(kysely),
    createQueryCompiler: () => new PostgresQueryCompiler(),
  },
});

function held(query: { compile(): CompiledQuery<unknown> }) {
  const write = WriteBuffer.heldWrite(query.compile());
  assert.ok(write, 'the write can be held');
  return write;
}

test('held writes become one statement, in the order they were held, placeholders renumbered', () => {
  const buffer = new WriteBuffer();
  buffer.hold(held(db.insertInto('items').values({ id: 1, label: 'a', amount: 10 })));
  buffer.hold(held(db.updateTable('notes').set({ text: 'b' }).where('id', '=', 7)));
  buffer.hold(held(db.deleteFrom('audit').where('id', '=', 9)));
  const statement = buffer.take();
  assert.equal(buffer.size, 0, 'taken: the buffer is empty');
  assert.ok(statement);
  // PostgreSQL runs the last CTE written first: the first held is written last.
  assert.equal(
    statement.sql,
    'with w3 as (delete from "audit" where "id" = $6), ' +
      'w2 as (update "notes" set "text" = $4 where "id" = $5), ' +
      'w1 as (insert into "items" ("id", "label", "amount") values ($1, $2, $3)) select 1',
  );
  assert.deepEqual(statement.parameters, [1, 'a', 10, 'b', 7, 9]);
  assert.equal(buffer.take(), null, 'nothing held: no statement');
});

test('one held write is sent as it is', () => {
  const buffer = new WriteBuffer();
  const query = db.updateTable('notes').set({ text: 'b' }).where('id', '=', 7).compile();
  const write = WriteBuffer.heldWrite(query);
  assert.ok(write);
  buffer.hold(write);
  assert.equal(buffer.take(), query);
});

test('a write that touches a table a held write modifies waits for a flush; one that does not joins', () => {
  const buffer = new WriteBuffer();
  buffer.hold(held(db.insertInto('items').values({ id: 1, label: 'a', amount: 10 })));
  // Another table: joins.
  assert.equal(
    buffer.mustFlushBefore(held(db.insertInto('notes').values({ id: 1, item_id: 1, text: 'x' }))),
    false,
  );
  // The same table (the same row, perhaps): waits.
  assert.equal(
    buffer.mustFlushBefore(held(db.updateTable('items').set({ amount: 11 }).where('id', '=', 1))),
    true,
  );
  // Another table, reading the modified one (it must see the insert): waits.
  const reading = db
    .insertInto('audit')
    .columns(['id', 'text'])
    .expression(db.selectFrom('items').select(['id', 'label']).where('id', '=', 1));
  assert.equal(buffer.mustFlushBefore(held(reading)), true);
  const inSubquery = db
    .updateTable('notes')
    .set({ text: 'y' })
    .where('item_id', 'in', db.selectFrom('items').select('id'));
  assert.equal(buffer.mustFlushBefore(held(inSubquery)), true);
  // Raw SQL that reads: its tables are not known, so it waits.
  const raw = db.updateTable('audit').set({ text: sql<string>`(select label from items limit 1)` });
  assert.equal(buffer.mustFlushBefore(held(raw)), true);
  // Raw SQL that reads nothing joins.
  const arithmetic = db.updateTable('notes').set({ item_id: sql<number>`item_id + ${1}` });
  assert.equal(buffer.mustFlushBefore(held(arithmetic)), false);
  // Nothing held: nothing to wait for.
  assert.equal(new WriteBuffer().mustFlushBefore(held(raw)), false);
});

test('a write with its own WITH is not held (it runs at once)', () => {
  const query = db
    .with('source', (q) => q.selectFrom('items').select('id'))
    .updateTable('notes')
    .set({ text: 'z' })
    .where('item_id', 'in', (eb) => eb.selectFrom('source').select('id'))
    .compile();
  assert.equal(WriteBuffer.heldWrite(query), null);
});

test('placeholders are found outside strings, identifiers and comments, and only as $1 … $n in order', () => {
  assert.deepEqual(placeholderPositions('update t set a = $1 where b = $2', 2), [17, 30]);
  const quoted = `update t set a = '$9', "b$1" = $1 -- $2\n where c = $2`;
  assert.deepEqual(placeholderPositions(quoted, 2), [quoted.indexOf('= $1') + 2, quoted.lastIndexOf('$2')]);
  const doubled = `update t set a = 'it''s $3' where b = $1 /* $2 */`;
  assert.deepEqual(placeholderPositions(doubled, 1), [doubled.indexOf('= $1') + 2]);
  assert.equal(placeholderPositions('update t set a = $2 where b = $1', 2), null, 'out of order');
  assert.equal(placeholderPositions('update t set a = $1 where b = $1', 2), null, 'used twice');
  assert.equal(placeholderPositions('update t set a = $1', 2), null, 'a parameter not in the SQL');
  assert.equal(placeholderPositions('update t set a = $$x$$ where b = $1', 1), null, 'dollar quotes');
  assert.equal(placeholderPositions(`update t set a = E'\\'' where b = $1`, 1), null, "E'' escapes");
  assert.equal(placeholderPositions(`update t set a = 'open`, 0), null, 'an unclosed string');
});
