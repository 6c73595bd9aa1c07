// The webhook log's references checked by the statement that writes them, not by a foreign key, on
// PostgreSQL (docs/performance.md "Webhook worker (eighth session)"): a foreign key is a trigger per row
// inserted, a lookup of the referenced row with a `FOR KEY SHARE` lock on it. Per delivery, the worker's
// one-statement flush (src/modules/webhooks/outcomes.ts) paid two such checks it cannot fail:
// - an attempt's delivery: inserted by the same statement (its id is the insert's `RETURNING`), or
//   updated by it under this worker's lease; retention deletes a delivery's attempts before it, in one
//   transaction;
// - a delivery's organization: copied from its event, and no organization is ever deleted. Every
//   delivery took a share lock on its organization's row, the row each API transaction of that
//   organization locks the same way (several lockers of one row at once cost PostgreSQL a multixact).
// The delivery's event keeps its foreign key: retention deletes events no delivery refers to, and the
// key is what stops it deleting one a redelivery has just referred to.
// SQLite keeps all three: one writer at a time, and a check there is an index probe in the process.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

export function webhookLogReferences(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind !== 'postgres') return;
      await sql`alter table webhook_attempts drop constraint if exists webhook_attempts_delivery_id_fkey`.execute(
        db,
      );
      await sql`alter table webhook_deliveries drop constraint if exists webhook_deliveries_organization_id_fkey`.execute(
        db,
      );
    },
  };
}
