// kassa refund conflicts | kassa refund resolve <refund_id> --outcome provider|kassa: the refunds whose
// provider contradicts what Kassa recorded after it finished them, and the operator's settlement of one
// (src/modules/refunds/conflict-settle.ts; docs/operations.md "Refund conflicts").
import { createContext } from '../context.ts';
import { openAndMigrate } from '../db/connection.ts';
import { OPERATOR } from '../modules/audit/record.ts';
import {
  type ConflictOutcome,
  listRefundConflicts,
  settleRefundConflict,
} from '../modules/refunds/conflict-settle.ts';
import { presentRefund } from '../modules/refunds/list.ts';
import type { Command } from './commands.ts';

const OUTCOMES: readonly ConflictOutcome[] = ['provider', 'kassa'];
const NOTE_MAX = 500;

const conflictsCommand: Command = {
  summary: 'List refunds whose provider contradicts Kassa (each blocks new refunds of its payment) as JSON.',
  usage: '[--org <slug>]',
  help: `Options:
  --org      only this organization's refunds (its slug)

Prints a JSON array, oldest conflict first, of {id, transaction, organization, environment, amount,
currency, amount_usd, status (Kassa's), provider_status, provider_refund_id, conflict, since}.
Settle one with "kassa refund resolve <id> --outcome provider|kassa".`,
  options: { org: { type: 'string' } },
  async run({ values, positionals, config }) {
    if (positionals.length > 0) {
      console.error('kassa: refund conflicts takes no arguments (see --help).');
      return 1;
    }
    const cfg = config();
    const handle = await openAndMigrate(cfg.database);
    try {
      const org = typeof values.org === 'string' ? values.org : undefined;
      console.log(JSON.stringify(await listRefundConflicts(handle.db, org)));
      return 0;
    } finally {
      await handle.close();
    }
  },
};

const resolveCommand: Command = {
  summary:
    "Settle a refund's provider conflict: book the provider's outcome, or keep Kassa's; prints the refund.",
  usage: '<refund_id> --outcome provider|kassa [--note <text>]',
  help: `The refund id is its public id (RF…) or numeric id.

  --outcome provider   the money moved as the provider says (read again now). A refund Kassa failed that
                       the provider completed becomes completed: the wallet is debited what its hold was
                       (refused if the wallet cannot cover it) and the payment counts it. A completed
                       refund the provider failed becomes failed: the wallet gets it back and the payment
                       is paid again. Emits refund.status_changed (and transaction.status_changed).
                       If the provider now agrees with Kassa, the conflict just closes.
  --outcome kassa      Kassa's books stand (you put it right at the provider, or outside it).
  --note               why, kept in the audit log (at most ${NOTE_MAX} characters)

Either way the conflict closes and the payment takes refunds again.`,
  options: { outcome: { type: 'string' }, note: { type: 'string' } },
  async run({ values, positionals, config }) {
    const [reference] = positionals;
    if (!reference || positionals.length !== 1) {
      console.error('kassa: refund resolve needs exactly one <refund_id> (see --help).');
      return 1;
    }
    const outcome = values.outcome;
    if (typeof outcome !== 'string' || !OUTCOMES.includes(outcome as ConflictOutcome)) {
      console.error(`kassa: --outcome must be one of ${OUTCOMES.join(', ')} (see --help).`);
      return 1;
    }
    const note = typeof values.note === 'string' ? values.note : null;
    if (note !== null && note.length > NOTE_MAX) {
      console.error(`kassa: --note may be at most ${NOTE_MAX} characters.`);
      return 1;
    }
    const cfg = config();
    const handle = await openAndMigrate(cfg.database);
    try {
      const ctx = createContext(cfg, handle);
      const refund = await settleRefundConflict(ctx, reference, outcome as ConflictOutcome, OPERATOR, note);
      const payment = await handle.db
        .selectFrom('payments')
        .select('public_id')
        .where('id', '=', refund.payment_id)
        .executeTakeFirstOrThrow();
      console.log(JSON.stringify(presentRefund({ ...refund, payment_public_id: payment.public_id })));
      return 0;
    } finally {
      await handle.close();
    }
  },
};

export const refundCommands: Record<string, Command> = {
  'refund conflicts': conflictsCommand,
  'refund resolve': resolveCommand,
};
