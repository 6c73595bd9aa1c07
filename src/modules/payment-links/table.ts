// Table types of this module (filled in with its migration).
export type PaymentLinkTables = Record<never, never>;
