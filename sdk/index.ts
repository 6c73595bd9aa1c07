// @kassa/sdk: the typed client and webhook verification.
export { Kassa, type KassaOptions, type RequestOptions } from './client.ts';
export * from './errors.ts';
export type * from './types.ts';
export { signWebhook, type VerifyOptions, verifyWebhook } from './webhooks.ts';
