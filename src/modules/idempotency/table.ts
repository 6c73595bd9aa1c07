import type { Generated } from 'kysely';

export interface IdempotencyKeysTable {
  id: Generated<number>;
  organization_id: number;
  environment: string;
  key: string;
  /** SHA-256 of method, path and raw body: the same key with another request is refused. */
  request_hash: string;
  /** in_progress: claimed, nothing committed; committed: the change committed with a provisional answer,
   * the request's own reply still to come; done: the answer to replay. */
  status: 'in_progress' | 'committed' | 'done';
  response_status: number | null;
  response_body: string | null;
  created_at: string;
  /** An in-progress claim older than this was abandoned (a crashed process) and may be taken over. */
  locked_until: string;
}

export interface IdempotencyTables {
  idempotency_keys: IdempotencyKeysTable;
}
