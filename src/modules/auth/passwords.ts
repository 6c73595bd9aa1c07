// Password checks and hashes for dashboard users, through the bounded hash queue (lib/hash-queue.ts); a
// counted check is bounded as a whole, from its count to its hash, the same way (lib/crypto.ts
// passwordChecks). A refusal is answered at once: 429 when this address already has its share of
// password checks in line, 503 when the line is full for everyone; both with Retry-After.

import { clientNetwork } from '../../http/client-network.ts';
import { DomainError, ValidationError } from '../../http/errors.ts';
import { DUMMY_PASSWORD_HASH, hashPassword, passwordChecks, verifyPassword } from '../../lib/crypto.ts';
import { HashQueueFullError } from '../../lib/hash-queue.ts';

export const MIN_PASSWORD_LENGTH = 10;
export const MAX_PASSWORD_LENGTH = 1024;

/** The 503's detail when the line is full for everyone (test/helpers/conformance.ts knows it by this). */
export const PASSWORD_CHECKS_BUSY_DETAIL = 'The service is busy checking passwords. Try again in a moment.';

/** The hash queue refused: the password was not checked (a login limiter gives the attempt back). */
export class PasswordCheckBusyError extends DomainError {
  constructor(scope: 'key' | 'all') {
    super(
      scope === 'key' ? 429 : 503,
      scope === 'key'
        ? 'Too many password checks in progress from your address. Try again in a moment.'
        : PASSWORD_CHECKS_BUSY_DETAIL,
      { 'retry-after': '1' },
    );
  }
}

function queueRefusal(error: unknown): unknown {
  return error instanceof HashQueueFullError ? new PasswordCheckBusyError(error.scope) : error;
}

/** Runs a whole password check (its count, then its hash) as one of the address's checks in progress. */
export async function inPasswordCheckLine<T>(address: string, check: () => Promise<T>): Promise<T> {
  try {
    return await passwordChecks.run(clientNetwork(address), check);
  } catch (error) {
    throw queueRefusal(error);
  }
}

/** Whether `password` is the user's; a missing user costs the same hash (unknown emails are not told apart). */
export async function passwordMatches(
  passwordHash: string | undefined,
  password: string,
  address: string | null,
): Promise<boolean> {
  try {
    const valid = await verifyPassword(
      password,
      passwordHash ?? DUMMY_PASSWORD_HASH,
      address && clientNetwork(address),
    );
    return valid && passwordHash !== undefined;
  } catch (error) {
    throw queueRefusal(error);
  }
}

/** Hashes a new password after checking its length (the field name goes into the 400). */
export async function newPasswordHash(
  field: string,
  password: string,
  address: string | null,
): Promise<string> {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new ValidationError(`${field}: must be at least ${MIN_PASSWORD_LENGTH} characters.`);
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new ValidationError(`${field}: must be at most ${MAX_PASSWORD_LENGTH} characters.`);
  }
  try {
    return await hashPassword(password, address && clientNetwork(address));
  } catch (error) {
    throw queueRefusal(error);
  }
}
