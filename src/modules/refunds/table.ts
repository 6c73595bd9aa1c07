// Table types of this module (filled in with its migration).
export type RefundTables = Record<never, never>;
