// kassa merchant create --org "Acme" --email owner@acme.test [--password -]
// `--password -` reads the password from standard input: a password on the command line is visible to
// every user of the machine (ps, /proc) and lands in shell history.
import { createContext } from '../context.ts';
import { openAndMigrate } from '../db/connection.ts';
import { randomBase62 } from '../lib/ids.ts';
import { createMerchant } from '../modules/organizations/service.ts';
import type { Command } from './commands.ts';

async function firstLineOfStdin(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) {
    text += String(chunk);
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/)[0];
}

export const merchantCreateCommand: Command = {
  summary: 'Create an organization and its owner; prints {organization, user} as JSON.',
  usage: '--org <name> --email <email> [--password -] [--name <owner name>]',
  help: `--password -   read the password from standard input (its first line), e.g. from a file:
               kassa merchant create ... --password - < password.txt
Without --password a random one is generated and printed once, as "password".
A password given on the command line itself works but is visible to other users (ps): avoid it.`,
  options: {
    org: { type: 'string' },
    email: { type: 'string' },
    password: { type: 'string' },
    name: { type: 'string' },
  },
  async run({ values, config }) {
    const org = values.org;
    const email = values.email;
    if (typeof org !== 'string' || typeof email !== 'string') {
      console.error('kassa: merchant create needs --org and --email (see --help).');
      return 1;
    }
    let given = typeof values.password === 'string' ? values.password : null;
    if (given === '-') given = await firstLineOfStdin();
    else if (given !== null) {
      console.error(
        'kassa: warning: a password on the command line is visible to other users; use --password -.',
      );
    }
    const generated = given === null ? randomBase62(20) : null;
    const password = given ?? (generated as string);
    const cfg = config();
    const handle = await openAndMigrate(cfg.database);
    try {
      const ctx = createContext(cfg, handle);
      const result = await createMerchant(ctx, {
        organization: org,
        email,
        password,
        name: typeof values.name === 'string' ? values.name : undefined,
      });
      console.log(JSON.stringify(generated ? { ...result, password: generated } : result));
      return 0;
    } finally {
      await handle.close();
    }
  },
};
