// kassa demo: a demo merchant with a product and a sandbox key, and how to use them.

import { createContext } from '../context.ts';
import { openAndMigrate } from '../db/connection.ts';
import { randomBase62 } from '../lib/ids.ts';
import { createKey } from '../modules/api-keys/service.ts';
import { OPERATOR } from '../modules/audit/record.ts';
import { createMerchant } from '../modules/organizations/service.ts';
import { createProduct } from '../modules/products/service.ts';
import type { Command } from './commands.ts';

export const demoCommand: Command = {
  summary: 'Create a demo merchant with a product and a sandbox API key, and print how to log in.',
  usage: '[--email <email>]',
  help: 'Options:\n  --email    the demo owner email (default demo+<random>@kassa.test)',
  options: { email: { type: 'string' } },
  async run({ values, config }) {
    const cfg = config();
    const handle = await openAndMigrate(cfg.database);
    try {
      const ctx = createContext(cfg, handle);
      const email =
        typeof values.email === 'string' ? values.email : `demo+${randomBase62(6).toLowerCase()}@kassa.test`;
      const password = randomBase62(16);
      const { organization, user } = await createMerchant(ctx, {
        organization: 'Demo Shop',
        email,
        password,
        name: 'Demo Owner',
      });
      // The demo has only a sandbox key, so its dashboard opens in test mode.
      await ctx.db
        .updateTable('organizations')
        .set({ test_mode_default: 1 })
        .where('id', '=', organization.id)
        .execute();
      const product = await createProduct(
        ctx,
        organization.id,
        {
          name: 'Demo T-shirt',
          unit_price: '25.00',
          currency: 'USD',
        },
        OPERATOR,
      );
      const key = await createKey(
        ctx,
        organization.id,
        {
          name: 'Demo sandbox key',
          allowed_scopes: '',
          environment: 'sandbox',
        },
        OPERATOR,
        null,
      );
      const base = cfg.publicUrl;
      console.log(`Demo merchant created.

  Dashboard:   ${base}/dashboard/   (email ${user.email}, password ${password})
  Sandbox key: ${key.raw_key}
  Product:     ${product.id} (${product.name}, ${product.unit_price} ${product.currency})

Log in with curl:
  curl -s ${base}/api/auth/login/ -H 'Content-Type: application/json' \\
    -d '{"email":"${user.email}","password":"${password}"}'

Create a sandbox checkout:
  curl -s ${base}/sandbox/api/checkout/create/ -H 'Authorization: Api-Key ${key.raw_key}' \\
    -H 'Content-Type: application/json' -d '{"billing_country":"US","billing_first_name":"Ada",
    "billing_last_name":"Lovelace","billing_email":"ada@example.com","products":[{"id":"${product.id}"}]}'`);
      return 0;
    } finally {
      await handle.close();
    }
  },
};
