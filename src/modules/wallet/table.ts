// Table types of this module (filled in with its migration).
export type WalletTables = Record<never, never>;
