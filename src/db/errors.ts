// Telling database errors apart, the same way on both databases.

/** A UNIQUE constraint refused the write (PostgreSQL SQLSTATE 23505, SQLite's "UNIQUE constraint failed"). */
export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if ((error as { code?: unknown }).code === '23505') return true;
  const message = error instanceof Error ? error.message : '';
  return /UNIQUE constraint failed|duplicate key value violates unique constraint/.test(message);
}

/** A row lock taken with NOWAIT was held by another transaction (PostgreSQL SQLSTATE 55P03). */
export function isLockNotAvailable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '55P03';
}
