import type { Generated } from 'kysely';

export interface IdempotencyKeysTable {
  id: Generated<number>;
  organization_id: number;
  environment: string;
  key: string;
  /** SHA-256 of method, path and raw body: the same key with another request is refused. */
  request_hash: string;
  status: 'in_progress' | 'done';
  response_status: number | null;
  response_body: string | null;
  created_at: string;
  /** An in-progress claim older than this was abandoned (a crashed process) and may be taken over. */
  locked_until: string;
}

export interface IdempotencyTables {
  idempotency_keys: IdempotencyKeysTable;
}
