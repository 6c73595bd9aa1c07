// kassa merchant create --org "Acme" --email owner@acme.test [--password '<pw>']
import { createContext } from '../context.ts';
import { openAndMigrate } from '../db/connection.ts';
import { randomBase62 } from '../lib/ids.ts';
import { createMerchant } from '../modules/organizations/service.ts';
import type { Command } from './commands.ts';

export const merchantCreateCommand: Command = {
  summary: 'Create an organization and its owner; prints {organization, user} as JSON.',
  usage: '--org <name> --email <email> [--password <password>] [--name <owner name>]',
  help: 'Without --password a random one is generated and printed once, as "password".',
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
    const generated = typeof values.password === 'string' ? null : randomBase62(20);
    const password = typeof values.password === 'string' ? values.password : (generated as string);
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
