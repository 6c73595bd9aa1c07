// Table types of this module (filled in with its migration).
export type CheckoutTables = Record<never, never>;
