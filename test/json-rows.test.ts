// A batch sent as one JSON parameter (src/db/json-rows.ts, the webhook worker's outcomes) stores exactly
// the values a statement with one parameter per value stores, on both databases: text with quotes,
// backslashes, newlines, non-Latin and astral characters, nulls, and integers up to 2^53; a lone
// surrogate as U+FFFD, as a parameter's UTF-8 has it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { jsonIds, jsonRows } from '../src/db/json-rows.ts';
import { createTestMerchant, DB_KIND, startTestServer, type TestServer } from './helpers/server.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer({ worker: false });
});
after(() => server?.close());

const TEXTS = [
  'plain',
  `quotes ' " and a backslash \\ and \\u0041`,
  'line\nbreak\ttab',
  'ünïcödé — 日本語 — 😀',
  '',
  null,
  'lone \ud800 surrogate',
];

test(`rows and ids read from one JSON parameter are stored exactly (${DB_KIND})`, async () => {
  const { organizationId } = await createTestMerchant(server);
  const db = server.ctx.db;
  const rows = TEXTS.map((subject, index) => ({
    organization_id: organizationId,
    environment: 'test',
    type: 'json.rows',
    subject,
    payload: JSON.stringify({ n: index, text: subject }),
    created_at: `2026-11-27T00:00:${String(index).padStart(2, '0')}.000Z`,
  }));
  const inserted = await db
    .insertInto('events')
    .columns(['organization_id', 'environment', 'type', 'subject', 'payload', 'created_at'])
    .expression(
      jsonRows(db, rows, {
        organization_id: 'bigint',
        environment: 'text',
        type: 'text',
        subject: 'text',
        payload: 'text',
        created_at: 'text',
      }),
    )
    .returning(['id'])
    .execute();
  assert.equal(inserted.length, rows.length);

  const stored = await db
    .selectFrom('events')
    .select(['organization_id', 'environment', 'type', 'subject', 'payload', 'created_at'])
    .where('type', '=', 'json.rows')
    .orderBy('id')
    .execute();
  assert.deepEqual(
    stored.map((row) => ({ ...row })),
    rows.map((row) => ({ ...row, subject: row.subject?.toWellFormed() ?? null })),
    'in the order given, value for value',
  );

  const ids = inserted.map((row) => row.id);
  const picked = [ids[1], ids[3], Number.MAX_SAFE_INTEGER];
  const updated = await db
    .updateTable('events')
    .set({ dispatched_at: 'picked' })
    .where('id', 'in', jsonIds(db, picked))
    .executeTakeFirst();
  assert.equal(Number(updated.numUpdatedRows), 2);
  const dispatched = await db
    .selectFrom('events')
    .select('id')
    .where('dispatched_at', '=', 'picked')
    .orderBy('id')
    .execute();
  assert.deepEqual(
    dispatched.map((row) => row.id),
    [ids[1], ids[3]],
  );
  const none = await db
    .updateTable('events')
    .set({ dispatched_at: 'none' })
    .where('id', 'in', jsonIds(db, []))
    .executeTakeFirst();
  assert.equal(Number(none.numUpdatedRows), 0, 'an empty batch touches nothing');
});
