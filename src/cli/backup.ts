// kassa backup --to <file>: a consistent copy of the embedded SQLite database, safe while the service
// runs (SQLite's online backup, page by page). PostgreSQL deployments use pg_dump instead.
import { closeSync, existsSync, openSync } from 'node:fs';
import { resolve } from 'node:path';
import { backup, DatabaseSync } from 'node:sqlite';
import { ensurePrivateFile, PRIVATE_FILE_MODE } from '../db/private-files.ts';
import type { Command } from './commands.ts';

export const backupCommand: Command = {
  summary: 'Copy the embedded SQLite database to a file, safely while the service runs.',
  usage: '--to <file>',
  help: `Options:
  --to    the backup file to write (must not exist yet)

Back up <data dir>/secret.key too (or keep KASSA_SECRET_KEY): webhook secrets are encrypted with it.
On PostgreSQL use pg_dump.`,
  options: { to: { type: 'string' } },
  async run({ values, config }) {
    if (typeof values.to !== 'string' || values.to === '') {
      console.error('kassa: backup needs --to <file> (see --help).');
      return 1;
    }
    const { database } = config();
    if (database.kind !== 'sqlite') {
      console.error('kassa: backup copies the embedded SQLite database; on PostgreSQL use pg_dump.');
      return 1;
    }
    if (!existsSync(database.file)) {
      console.error(`kassa: there is no database at ${database.file} yet.`);
      return 1;
    }
    const target = resolve(values.to);
    if (existsSync(target)) {
      console.error(`kassa: ${target} already exists; choose a new file.`);
      return 1;
    }
    // The copy holds everything the database does: created 0600 before a byte is written to it.
    closeSync(openSync(target, 'wx', PRIVATE_FILE_MODE));
    const source = new DatabaseSync(database.file, { readOnly: true });
    try {
      const pages = await backup(source, target);
      ensurePrivateFile(target);
      console.log(`backed up ${database.file} to ${target} (${pages} pages)`);
      return 0;
    } finally {
      source.close();
    }
  },
};
