// Limits shared by the unauthenticated JSON endpoints (hosted checkout step, payment-link start,
// sync-status by token, provider webhooks): their largest legitimate body is a few KiB, so anything far
// bigger is refused (413) before it is parsed.
export const PUBLIC_BODY_LIMIT = 64 * 1024;
