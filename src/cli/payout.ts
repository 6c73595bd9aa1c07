// kassa payout complete <payout_id> | kassa payout reject <payout_id>: the operator settles a payout.

import { createContext } from '../context.ts';
import { openAndMigrate } from '../db/connection.ts';
import { OPERATOR } from '../modules/audit/record.ts';
import { operatorDestination } from '../modules/payouts/destinations.ts';
import { presentPayout, settlePayout } from '../modules/payouts/service.ts';
import { listLimit } from './args.ts';
import type { Command } from './commands.ts';

function payoutCommand(outcome: 'completed' | 'rejected'): Command {
  const verb = outcome === 'completed' ? 'complete' : 'reject';
  return {
    summary:
      outcome === 'completed'
        ? 'Mark a pending payout as paid out: the wallet is debited; prints the payout as JSON.'
        : 'Reject a pending payout: its hold is released; prints the payout as JSON.',
    usage: '<payout_id>',
    help: `The payout id is its public id (PO…) or numeric id. Emits payout.status_changed.`,
    options: {},
    async run({ positionals, config }) {
      const [reference] = positionals;
      if (!reference || positionals.length !== 1) {
        console.error(`kassa: payout ${verb} needs exactly one <payout_id> (see --help).`);
        return 1;
      }
      const cfg = config();
      const handle = await openAndMigrate(cfg.database);
      try {
        const payout = await settlePayout(createContext(cfg, handle), reference, outcome, OPERATOR);
        console.log(JSON.stringify(payout));
        return 0;
      } finally {
        await handle.close();
      }
    },
  };
}

const STATUSES = ['pending', 'completed', 'rejected'] as const;

/** kassa payout list [--status …]: what waits for the operator, across organizations, newest first. */
const payoutListCommand: Command = {
  summary:
    'List payout requests of every organization as JSON, newest first (pending ones are waiting for you).',
  usage: '[--status pending|completed|rejected] [--org <slug>] [--limit <n>]',
  help: `Options:
  --status   only payouts in this status
  --org      only this organization's payouts (its slug)
  --limit    at most this many (default 100, at most 1000)

Prints a JSON array of {id, amount, currency, status, environment, destination, created_at, updated_at,
organization}; destination is the bank account the merchant had set when asking, with the full IBAN or
account number (what the transfer needs), or null.
Settle one with "kassa payout complete <id>" or "kassa payout reject <id>".`,
  options: { status: { type: 'string' }, org: { type: 'string' }, limit: { type: 'string' } },
  async run({ values, positionals, config }) {
    const status = values.status;
    if (positionals.length > 0) {
      console.error('kassa: payout list takes no arguments (see --help).');
      return 1;
    }
    if (status !== undefined && !STATUSES.includes(status as (typeof STATUSES)[number])) {
      console.error(`kassa: --status must be one of ${STATUSES.join(', ')}, got "${status}".`);
      return 1;
    }
    const limit = listLimit(values.limit);
    if (limit === null) return 1;
    const cfg = config();
    const handle = await openAndMigrate(cfg.database);
    try {
      let query = handle.db
        .selectFrom('payouts')
        .innerJoin('organizations', 'organizations.id', 'payouts.organization_id')
        .selectAll('payouts')
        .select('organizations.slug');
      if (typeof status === 'string')
        query = query.where('payouts.status', '=', status as (typeof STATUSES)[number]);
      if (typeof values.org === 'string') query = query.where('organizations.slug', '=', values.org);
      const rows = await query
        .orderBy('payouts.created_at', 'desc')
        .orderBy('payouts.id', 'desc')
        .limit(limit)
        .execute();
      // The operator sees each payout's bank account in full: it is what the transfer needs.
      const payouts = [];
      for (const { slug, ...row } of rows) {
        const destination =
          row.destination_id === null
            ? undefined
            : await operatorDestination({ db: handle.db, config: cfg }, row.destination_id);
        payouts.push({
          ...presentPayout(row, undefined),
          destination: destination ?? null,
          organization: slug,
        });
      }
      console.log(JSON.stringify(payouts));
      return 0;
    } finally {
      await handle.close();
    }
  },
};

export const payoutCommands: Record<string, Command> = {
  'payout list': payoutListCommand,
  'payout complete': payoutCommand('completed'),
  'payout reject': payoutCommand('rejected'),
};
