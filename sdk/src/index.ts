// @kassa/sdk: the typed client of Kassa's API-key API, and webhook verification.
export { Kassa, type KassaOptions, type RequestOptions } from './client.ts';
export * from './errors.ts';
export type * from './types.ts';
export {
  signStandardWebhook,
  signWebhook,
  type VerifyOptions,
  verifyInterfaceSignature,
  verifyStandardSignature,
  verifyWebhook,
  type WebhookHeaders,
} from './webhooks.ts';
