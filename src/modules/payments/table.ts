// Table types of this module (filled in with its migration).
export type PaymentTables = Record<never, never>;
