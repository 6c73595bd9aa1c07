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
  created_at: string;
  updated_at: string;
}

export type PayoutRow = Selectable<PayoutsTable>;

export interface PayoutTables {
  payouts: PayoutsTable;
}
