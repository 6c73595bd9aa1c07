// The data directory and the files in it hold secrets (the database, secret.key, mails with codes):
// the directory is 0700 and the files 0600, whatever the process umask. Existing installs created
// with looser modes are tightened at start.
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

function tighten(path: string, mode: number): void {
  try {
    chmodSync(path, mode);
  } catch {
    // Not ours to change (another owner, a read-only mount): leave it to the operator.
  }
}

export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  tighten(dir, PRIVATE_DIR_MODE);
}

/** Creates the file empty with mode 0600 if it does not exist, and tightens it if it does. */
export function ensurePrivateFile(file: string): void {
  if (!existsSync(file)) closeSync(openSync(file, 'a', PRIVATE_FILE_MODE));
  tighten(file, PRIVATE_FILE_MODE);
}

/** A SQLite database and its WAL companions (SQLite gives new ones the database file's mode). */
export function ensurePrivateDatabase(file: string): void {
  ensurePrivateFile(file);
  for (const companion of [`${file}-wal`, `${file}-shm`]) {
    if (existsSync(companion)) tighten(companion, PRIVATE_FILE_MODE);
  }
}
