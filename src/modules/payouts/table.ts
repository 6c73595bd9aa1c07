// Table types of this module (filled in with its migration).
export type PayoutTables = Record<never, never>;
