// Table types of this module (filled in with its migration).
export type WebhookTables = Record<never, never>;
