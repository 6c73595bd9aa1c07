// kassa payout complete <payout_id> | kassa payout reject <payout_id>: the operator settles a payout.
import { createContext } from '../context.ts';
import { openAndMigrate } from '../db/connection.ts';
import { settlePayout } from '../modules/payouts/service.ts';
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
        const payout = await settlePayout(createContext(cfg, handle), reference, outcome);
        console.log(JSON.stringify(payout));
        return 0;
      } finally {
        await handle.close();
      }
    },
  };
}

export const payoutCommands: Record<string, Command> = {
  'payout complete': payoutCommand('completed'),
  'payout reject': payoutCommand('rejected'),
};
