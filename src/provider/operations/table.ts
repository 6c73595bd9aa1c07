// The write-ahead rows of provider calls, and the provider events already handled.
import type { Generated, Selectable } from 'kysely';
import type { Environment } from '../../modules/api-keys/table.ts';

/**
 * in_flight: committed before the call, no answer recorded yet (a crash leaves it here);
 * unknown: the call answered nothing usable (timeout, 5xx), the reconciler reads the provider;
 * done: the provider's answer is recorded; flagged: still unknown after the last read, for review.
 */
export type OperationState = 'in_flight' | 'unknown' | 'done' | 'flagged';

/** The states of a call whose outcome is not recorded (every state but `done`): it is not over. */
export const OPEN_OPERATION_STATES = ['in_flight', 'unknown', 'flagged'] as const satisfies OperationState[];

/**
 * The open states the reconciler still reads (on `next_read_at`): a flagged call is read no more, it
 * waits for the operator.
 */
export const READ_OPERATION_STATES = ['in_flight', 'unknown'] as const satisfies OperationState[];

export interface ProviderOperationsTable {
  id: Generated<number>;
  organization_id: number | null;
  environment: Environment;
  provider: string;
  /** What the call was: payment_attempt, payment_open, refund, customer, setup, renewal_charge, … */
  kind: string;
  /** The idempotency key sent with the call, derived from Kassa's own row (see provider/types.ts). */
  idempotency_key: string;
  /** The Kassa row the call is about (payment, refund, cycle, …) and its id. */
  subject_type: string;
  subject_id: number;
  /** The handle a read finds the provider's object by (our public id: TX…, RF…). */
  reference: string;
  /** JSON: what a read needs besides the reference (the provider payment id of a refund, …). Never card data. */
  context: string;
  state: OperationState;
  outcome: 'succeeded' | 'pending' | 'requires_action' | 'failed' | null;
  outcome_code: string | null;
  outcome_message: string | null;
  /** The provider's id of what the call made (payment, refund, setup, customer), once known. */
  provider_object_id: string | null;
  /** Reads the reconciler made. */
  reads: Generated<number>;
  next_read_at: string | null;
  last_read_at: string | null;
  last_read_error: string | null;
  flagged_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface ProviderEventsTable {
  id: Generated<number>;
  provider: string;
  event_id: string;
  type: string;
  received_at: string;
  processed_at: string | null;
}

export type OperationRow = Selectable<ProviderOperationsTable>;

export interface ProviderTables {
  provider_operations: ProviderOperationsTable;
  provider_events: ProviderEventsTable;
}
