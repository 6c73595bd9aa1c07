// Errors the SDK throws: every API error carries the HTTP status and the server's `detail`.
export class KassaError extends Error {
  override readonly name: string = 'KassaError';
}

export class KassaApiError extends KassaError {
  override readonly name: string = 'KassaApiError';
  readonly status: number;
  readonly detail: string;
  readonly requestId: string | null;
  constructor(status: number, detail: string, requestId: string | null) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
    this.requestId = requestId;
  }
}

/** 401: the key is missing, invalid, revoked, or used on the wrong base path. */
export class KassaAuthenticationError extends KassaApiError {
  override readonly name = 'KassaAuthenticationError';
}
/** 403: the key lacks the scope the endpoint needs. */
export class KassaPermissionError extends KassaApiError {
  override readonly name = 'KassaPermissionError';
}
/** 400 / 422: the request was refused; `detail` says which field or rule. */
export class KassaInvalidRequestError extends KassaApiError {
  override readonly name = 'KassaInvalidRequestError';
}
/** 404 */
export class KassaNotFoundError extends KassaApiError {
  override readonly name = 'KassaNotFoundError';
}
/** 409: the same Idempotency-Key is still in flight. */
export class KassaConflictError extends KassaApiError {
  override readonly name = 'KassaConflictError';
}
/** 429 */
export class KassaRateLimitError extends KassaApiError {
  override readonly name = 'KassaRateLimitError';
}

/** The connection failed or timed out before an answer arrived. */
export class KassaConnectionError extends KassaError {
  override readonly name = 'KassaConnectionError';
}

/** A webhook whose signature does not verify. The message says what is wrong. */
export class KassaSignatureVerificationError extends KassaError {
  override readonly name = 'KassaSignatureVerificationError';
}

export function errorFor(status: number, detail: string, requestId: string | null): KassaApiError {
  const Class =
    status === 401
      ? KassaAuthenticationError
      : status === 403
        ? KassaPermissionError
        : status === 404
          ? KassaNotFoundError
          : status === 409
            ? KassaConflictError
            : status === 429
              ? KassaRateLimitError
              : status === 400 || status === 422
                ? KassaInvalidRequestError
                : KassaApiError;
  return new Class(status, detail, requestId);
}
