// Payouts: the merchant withdraws from the wallet balance; the operator completes or rejects.
import type { Generated, Selectable } from 'kysely';
import type { Environment } from '../api-keys/table.ts';

export type PayoutStatus = 'pending' | 'completed' | 'rejected';

export interface PayoutsTable {
  id: Generated<number>;
  /** PO + 16 base62 */
  public_id: string;
  organization_id: number;
  environment: Environment;
  /** USD minor units. */
  amount: number;
  currency: string;
  status: PayoutStatus;
  /** The account current when the payout was requested (null: none was set). */
  destination_id: Generated<number | null>;
  created_at: string;
  updated_at: string;
}

/** A bank account payouts go to; rows are never edited (a change replaces the current one). */
export interface PayoutDestinationsTable {
  id: Generated<number>;
  /** ba_ + 16 base62 */
  public_id: string;
  organization_id: number;
  environment: Environment;
  type: 'iban' | 'us_account';
  account_holder: string;
  /** ISO country: the IBAN's first two letters, or US. */
  country: string;
  /** The BIC (IBAN, optional) or the ABA routing number (US): public bank identifiers. */
  bank_code: string | null;
  last4: string;
  /** AES-256-GCM under KASSA_SECRET_KEY of {iban} or {account_number}. */
  number_sealed: string;
  created_at: string;
  replaced_at: string | null;
}

export type PayoutRow = Selectable<PayoutsTable>;
export type PayoutDestinationRow = Selectable<PayoutDestinationsTable>;

export interface PayoutTables {
  payouts: PayoutsTable;
  payout_destinations: PayoutDestinationsTable;
}
