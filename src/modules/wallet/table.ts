// The merchant wallet (USD, one per organization and environment) and its double-entry ledger.
import type { Generated, Selectable } from 'kysely';
import type { Environment } from '../api-keys/table.ts';

/**
 * The bucket totals, kept in the same transaction as the entries that move them. The database refuses
 * a negative wallet: balance, reserve, held >= 0 and held <= balance + reserve (CHECK constraints).
 */
export interface WalletsTable {
  id: Generated<number>;
  organization_id: number;
  environment: Environment;
  currency: string;
  /** USD minor units. */
  balance: number;
  reserve: number;
  held: number;
  created_at: string;
  updated_at: string;
}

/** The wallet's own buckets, and the accounts on the other side of each movement. */
export type LedgerAccount =
  | 'balance'
  | 'reserve'
  | 'held'
  /** Contra account of `held`: a hold earmarks money without moving it, so the pair sums to zero. */
  | 'hold_offset'
  /** Money coming in from settled payments. */
  | 'settlements'
  /** Money returned to customers by completed refunds. */
  | 'refunds'
  /** Money paid out to the merchant's bank. */
  | 'payouts';

export type MovementKind =
  | 'settlement'
  | 'reserve_release'
  | 'refund_hold'
  | 'refund_release'
  | 'refund_debit'
  /** A refund failed in Kassa that the provider completed, booked by the operator: no hold left to debit. */
  | 'refund_late_debit'
  /** A completed refund the provider failed (the money came back), booked by the operator. */
  | 'refund_reversal'
  | 'payout_hold'
  | 'payout_release'
  | 'payout_debit';

/** One business movement: its entries sum to zero. (kind, reference_id) is unique: each happens once. */
export interface WalletMovementsTable {
  id: Generated<number>;
  wallet_id: number;
  kind: MovementKind;
  /** The payment (settlement, reserve release), refund or payout the movement belongs to. */
  reference_id: number;
  /** Its public id (TX…, RF…, PO…), for display. */
  reference_public_id: string;
  /** USD minor units moved (positive): the settlement's net, the hold, the debit, the release. */
  amount: number;
  created_at: string;
}

export interface WalletEntriesTable {
  id: Generated<number>;
  movement_id: number;
  wallet_id: number;
  account: LedgerAccount;
  /** Signed USD minor units. */
  amount: number;
  created_at: string;
}

/** The reserve part of each settlement, released to the balance when due. */
export interface WalletReservesTable {
  id: Generated<number>;
  wallet_id: number;
  payment_id: number;
  amount: number;
  release_at: string;
  released_at: string | null;
  /** What was actually moved (refunds may have consumed part of the reserve meanwhile). */
  released_amount: number | null;
}

export type WalletRow = Selectable<WalletsTable>;
export type WalletMovementRow = Selectable<WalletMovementsTable>;

export interface WalletTables {
  wallets: WalletsTable;
  wallet_movements: WalletMovementsTable;
  wallet_entries: WalletEntriesTable;
  wallet_reserves: WalletReservesTable;
}
