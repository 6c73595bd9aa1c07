// Owned by its module; filled in when the module arrives.
import type { Kysely, Migration } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

export function paymentLinks(_kind: DatabaseKind): Migration {
  return {
    async up(_db: Kysely<unknown>) {},
  };
}
