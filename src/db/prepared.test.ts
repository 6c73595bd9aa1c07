// Which SQL goes by name on PostgreSQL (statementName): repeated statements with parameters, within
// bounds; the named statements themselves are exercised by the whole PostgreSQL suite.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nameFlush, statementName } from './prepared.ts';

test('SQL with parameters is named when it is sent a second time, and keeps its name', () => {
  const text = 'select id, status from payments where id = $1';
  assert.equal(statementName(text, 1), undefined, 'first sight: sent unnamed');
  const name = statementName(text, 1);
  assert.match(name ?? '', /^kassa_\d+$/);
  assert.equal(statementName(text, 1), name);
  assert.notEqual(statementName('select id from refunds where id = $1', 1), name);
});

test('SQL that grows with a batch, or selects or returns *, is never named', () => {
  for (const text of [
    'insert into t (a, b) values ($1, $2), ($3, $4)',
    'update events set dispatched_at = $1 where id in ($2, $3, $4)',
    'select * from payments where id = $1',
    'select "payments".* from payments where id = $1',
    'insert into t (a) values ($1) returning *',
  ])
    for (let n = 0; n < 3; n++) assert.equal(statementName(text, 2), undefined, text);
  const single = 'update events set dispatched_at = $1 where id in ($2)';
  statementName(single, 2);
  assert.match(statementName(single, 2) ?? '', /^kassa_\d+$/, 'a list of one is the same SQL every time');
});

test('SQL without parameters and SQL longer than 4 KB are never named', () => {
  for (let n = 0; n < 3; n++) assert.equal(statementName('begin', 0), undefined);
  const batch = `insert into t (a) values ${Array.from({ length: 800 }, (_, i) => `($${i + 1})`).join(', ')}`;
  assert.ok(batch.length > 4096);
  for (let n = 0; n < 3; n++) assert.equal(statementName(batch, 800), undefined);
});

test('at most 300 statements are named; later SQL goes unnamed', () => {
  const named = new Set<string>();
  for (let n = 0; n < 400; n++) {
    const text = `select $1::int + ${n}`;
    statementName(text, 1);
    const name = statementName(text, 1);
    if (name !== undefined) named.add(name);
  }
  // Two names were given by the tests above (the same process).
  assert.equal(named.size, 298);
  const late = 'select $1::int - 1';
  statementName(late, 1);
  assert.equal(statementName(late, 1), undefined);
});

test('a flush of held writes is named at its second sight, even with a list after IN or rows of VALUES', () => {
  const flush =
    'with w2 as (update ops set state = $3 where id = $4 and state in ($5, $6)), ' +
    'w1 as (insert into entries (a, b) values ($1, $2), ($7, $8)) select 1';
  assert.equal(statementName(flush, 8), undefined, 'as any SQL: a batch is never named');
  nameFlush(flush);
  assert.equal(statementName(flush, 8), undefined, 'first sight of the flush: still unnamed');
  nameFlush(flush);
  const name = statementName(flush, 8);
  assert.match(name ?? '', /^kassa_\d+$/);
  nameFlush(flush);
  assert.equal(statementName(flush, 8), name, 'keeps its name');
  const reading =
    'with w2 as (delete from t where id = $2), w1 as (insert into u select * from v where id = $1) select 1';
  for (let n = 0; n < 3; n++) nameFlush(reading);
  assert.equal(statementName(reading, 2), undefined, 'SQL that reads * is never named');
});
