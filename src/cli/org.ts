// kassa org show <slug> | kassa org set <slug> --fee-percent … : the operator reads and sets an
// organization's commercial terms (read-only to the merchant). Each change is audited.

import { openAndMigrate } from '../db/connection.ts';
import type { Executor } from '../db/database.ts';
import {
  formatAmount,
  MAX_AMOUNT_MINOR,
  MoneyFormatError,
  mulDivHalfUp,
  parseAmount,
  toBigInt,
} from '../lib/money.ts';
import { OPERATOR, recordAudit } from '../modules/audit/record.ts';
import { presentOrganization } from '../modules/organizations/service.ts';
import type { OrganizationRow } from '../modules/organizations/table.ts';
import type { Command } from './commands.ts';

type Terms = Pick<
  OrganizationRow,
  | 'fee_bp'
  | 'tax_rate_bp'
  | 'rolling_reserve_bp'
  | 'rolling_reserve_days'
  | 'min_payment'
  | 'max_payment'
  | 'price_mode'
>;

class UsageError extends Error {}

/** A decimal with at most two decimals, in hundredths (basis points for a percentage, cents for an amount). */
function hundredths(option: string, raw: string, what: string): bigint {
  try {
    return parseAmount(raw);
  } catch (error) {
    if (!(error instanceof MoneyFormatError)) throw error;
    throw new UsageError(`--${option} must be ${what} with at most two decimals, got "${raw}".`);
  }
}

/** A percentage in basis points, within [0, 100]. */
function percent(option: string, raw: string): number {
  const basisPoints = hundredths(option, raw, 'a percentage');
  if (basisPoints > 10_000n) throw new UsageError(`--${option} must be at most 100, got ${raw}.`);
  return Number(basisPoints);
}

function amount(option: string, raw: string): number {
  const minor = hundredths(option, raw, 'an amount');
  if (minor < 1n) throw new UsageError(`--${option} must be at least 0.01.`);
  if (minor > MAX_AMOUNT_MINOR)
    throw new UsageError(`--${option} must be at most ${formatAmount(MAX_AMOUNT_MINOR)}.`);
  return Number(minor);
}

function days(option: string, raw: string): number {
  if (!/^\d{1,4}$/.test(raw) || Number(raw) > 3650) {
    throw new UsageError(`--${option} must be a whole number of days from 0 to 3650, got "${raw}".`);
  }
  return Number(raw);
}

function pricingMode(raw: string): 'HT' | 'TTC' {
  const mode = { HT: 'HT', TTC: 'TTC', TAX_EXCLUSIVE: 'HT', TAX_INCLUSIVE: 'TTC' }[raw.toUpperCase()];
  if (!mode)
    throw new UsageError(`--pricing-mode must be HT (TAX_EXCLUSIVE) or TTC (TAX_INCLUSIVE), got "${raw}".`);
  return mode as 'HT' | 'TTC';
}

const OPTIONS = {
  'fee-percent': (raw: string) => ({ fee_bp: percent('fee-percent', raw) }),
  'reserve-percent': (raw: string) => ({ rolling_reserve_bp: percent('reserve-percent', raw) }),
  'reserve-days': (raw: string) => ({ rolling_reserve_days: days('reserve-days', raw) }),
  'min-payment': (raw: string) => ({ min_payment: amount('min-payment', raw) }),
  'max-payment': (raw: string) => ({ max_payment: amount('max-payment', raw) }),
  'tax-rate': (raw: string) => ({ tax_rate_bp: percent('tax-rate', raw) }),
  'pricing-mode': (raw: string) => ({ price_mode: pricingMode(raw) }),
} satisfies Record<string, (raw: string) => Partial<Terms>>;

/** The rules that hold between the terms, checked on the result of the change. */
function checkTerms(terms: Terms): void {
  if (terms.min_payment > terms.max_payment) {
    throw new UsageError(
      `the minimum payment (${formatAmount(toBigInt(terms.min_payment))}) may not exceed the maximum (${formatAmount(toBigInt(terms.max_payment))}).`,
    );
  }
  // The fee is rounded half-up per payment: it must leave the merchant something of the smallest payment.
  const smallest = toBigInt(terms.min_payment);
  const fee = mulDivHalfUp(smallest, toBigInt(terms.fee_bp), 10_000n);
  if (terms.fee_bp >= 10_000 || fee >= smallest) {
    throw new UsageError(
      `a fee of ${formatAmount(toBigInt(terms.fee_bp))} % leaves nothing to the merchant of a ${formatAmount(smallest)} payment; ` +
        'lower --fee-percent or raise --min-payment.',
    );
  }
}

async function findOrganization(db: Executor, slug: string) {
  return db.selectFrom('organizations').selectAll().where('slug', '=', slug).executeTakeFirst();
}

function slugOf(positionals: string[], command: string): string {
  if (positionals.length !== 1 || !positionals[0]) {
    throw new UsageError(`${command} needs exactly one <slug> (see --help).`);
  }
  return positionals[0];
}

const present = (terms: Partial<Terms>) =>
  Object.fromEntries(
    Object.entries(terms).map(([column, value]) => {
      const shown =
        column === 'rolling_reserve_days' || column === 'price_mode'
          ? value
          : formatAmount(toBigInt(value as number));
      return [column.replace(/_bp$/, '_percent'), shown];
    }),
  );

export const orgCommands: Record<string, Command> = {
  'org show': {
    summary: "Print an organization's profile and commercial terms as JSON.",
    usage: '<slug>',
    help: 'The slug is the one `kassa merchant create` printed (also in the dashboard URL of the merchant).',
    options: {},
    async run({ positionals, config }) {
      const cfg = config();
      const handle = await openAndMigrate(cfg.database);
      try {
        const slug = slugOf(positionals, 'org show');
        const row = await findOrganization(handle.db, slug);
        if (!row) {
          console.error(`kassa: no organization with slug "${slug}".`);
          return 1;
        }
        console.log(JSON.stringify(presentOrganization(row)));
        return 0;
      } catch (error) {
        if (!(error instanceof UsageError)) throw error;
        console.error(`kassa: ${error.message}`);
        return 1;
      } finally {
        await handle.close();
      }
    },
  },
  'org set': {
    summary: "Set an organization's commercial terms (fee, reserve, payment limits, tax, pricing mode).",
    usage:
      '<slug> [--fee-percent <p>] [--reserve-percent <p>] [--reserve-days <n>] [--min-payment <amount>] ' +
      '[--max-payment <amount>] [--tax-rate <p>] [--pricing-mode HT|TTC]',
    help: `Options (give at least one):
  --fee-percent      fee on each payment, 0–100 with two decimals (default 2.90)
  --reserve-percent  share of each settlement held in the rolling reserve (default 10)
  --reserve-days     days before the reserve is released (default 90)
  --min-payment      smallest checkout total, in the charge currency (default 0.50)
  --max-payment      largest checkout total (default 100000.00)
  --tax-rate         tax rate in percent added to HT prices (default 0)
  --pricing-mode     HT (prices before tax, TAX_EXCLUSIVE) or TTC (tax included, TAX_INCLUSIVE)

A fee that leaves nothing to the merchant of the smallest payment is refused. New terms apply to
payments created from now on; existing payments keep theirs. Prints the organization and the changes
as JSON; the change is written to the audit log.`,
    options: Object.fromEntries(Object.keys(OPTIONS).map((name) => [name, { type: 'string' as const }])),
    async run({ positionals, values, config }) {
      const cfg = config();
      const handle = await openAndMigrate(cfg.database);
      try {
        const slug = slugOf(positionals, 'org set');
        const changes: Partial<Terms> = {};
        for (const [name, parse] of Object.entries(OPTIONS)) {
          const raw = values[name];
          if (typeof raw === 'string') Object.assign(changes, parse(raw.trim()));
        }
        if (Object.keys(changes).length === 0)
          throw new UsageError('org set needs at least one option (see --help).');
        const result = await handle.db.transaction().execute(async (trx) => {
          const row = await findOrganization(trx, slug);
          if (!row) throw new UsageError(`no organization with slug "${slug}".`);
          const before: Terms = row;
          checkTerms({ ...before, ...changes });
          const now = new Date().toISOString();
          await trx
            .updateTable('organizations')
            .set({ ...changes, updated_at: now })
            .where('id', '=', row.id)
            .execute();
          const changed = Object.fromEntries(
            (Object.keys(changes) as (keyof Terms)[])
              .filter((column) => before[column] !== changes[column])
              .map((column) => [column, { from: before[column], to: changes[column] }]),
          );
          await recordAudit(
            trx,
            row.id,
            OPERATOR,
            {
              action: 'organization.terms_changed',
              target: { type: 'organization', id: row.slug },
              details: changed,
            },
            new Date().toISOString(),
          );
          const after = await findOrganization(trx, slug);
          if (!after) throw new Error('the organization vanished');
          const shown = Object.fromEntries(
            Object.entries(changed).map(([column, { from, to }]) => {
              const [name] = Object.keys(present({ [column]: from }));
              return [name, { from: present({ [column]: from })[name], to: present({ [column]: to })[name] }];
            }),
          );
          return { organization: presentOrganization(after), changed: shown };
        });
        console.log(JSON.stringify(result));
        return 0;
      } catch (error) {
        if (!(error instanceof UsageError)) throw error;
        console.error(`kassa: ${error.message}`);
        return 1;
      } finally {
        await handle.close();
      }
    },
  },
};
