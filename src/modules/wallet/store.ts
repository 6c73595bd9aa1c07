// Wallet queries: every lookup is scoped by organization and environment.
import type { Executor } from '../../db/database.ts';
import type { Environment } from '../api-keys/table.ts';

export function findWallet(db: Executor, organizationId: number, environment: Environment) {
  return db
    .selectFrom('wallets')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment)
    .executeTakeFirst();
}

export function recentMovements(db: Executor, walletId: number, limit: number) {
  return db
    .selectFrom('wallet_movements')
    .selectAll()
    .where('wallet_id', '=', walletId)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}

export function entriesOfMovements(db: Executor, movementIds: number[]) {
  if (movementIds.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('wallet_entries')
    .select(['movement_id', 'account', 'amount'])
    .where('movement_id', 'in', movementIds)
    .execute();
}

/** Sum of entries per account of one wallet: the ledger's view of the buckets. */
export function accountTotals(db: Executor, walletId: number) {
  return db
    .selectFrom('wallet_entries')
    .select(['account', (eb) => eb.fn.sum<number | string>('amount').as('total')])
    .where('wallet_id', '=', walletId)
    .groupBy('account')
    .execute();
}

/** Movements whose entries do not sum to zero (always empty unless the ledger is corrupt). */
export function unbalancedMovements(db: Executor, walletId: number) {
  return db
    .selectFrom('wallet_entries')
    .select(['movement_id', (eb) => eb.fn.sum<number | string>('amount').as('total')])
    .where('wallet_id', '=', walletId)
    .groupBy('movement_id')
    .having((eb) => eb.fn.sum('amount'), '!=', 0)
    .execute();
}
