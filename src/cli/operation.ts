// kassa operation list | kassa operation resolve <idempotency-key>: the operator settles the provider calls
// flagged for review, of every kind but renewal tries (kassa renewal resolve), from one more read of the
// provider (src/provider/operations/resolve.ts; docs/operations.md "Flagged provider calls").
import { createContext } from '../context.ts';
import { OPERATOR } from '../modules/audit/record.ts';
import { listLimit } from './args.ts';
import type { Command } from './commands.ts';
import { printFromDatabase } from './database.ts';

// The reconciler's handlers (checkout, payments, refunds, subscriptions, providers) are loaded by these
// commands only, so the other commands start as quickly as before.
const modules = async () => ({
  ...(await import('../provider/operations/resolve.ts')),
  ...(await import('../worker/loops.ts')),
});

const operationListCommand: Command = {
  summary: 'List the provider calls flagged for review, of every kind, as JSON, oldest first.',
  usage: '[--org <slug>] [--kind <kind>] [--limit <n>]',
  help: `Options:
  --org      only this organization's calls (its slug)
  --kind     only calls of this kind (payment_attempt, payment_open, payment_cancel, refund, signup_setup,
             renewal_charge)
  --limit    at most this many (default 100, at most 1000)

Prints a JSON array of {operation, kind, organization, environment, provider, reference, why, reason,
called_at, flagged_at, resolve}. reference is the payment (TX…), refund (RF…) or subscription (SU…) the
call was about; why is "unknown" when the reconciler could not read the outcome back by its last read,
"refused" when the provider refused a renewal try for 72 hours; resolve is the command that settles it
("kassa operation resolve <operation>", or "kassa renewal resolve …" for a renewal try).`,
  options: { org: { type: 'string' }, kind: { type: 'string' }, limit: { type: 'string' } },
  async run({ values, positionals, config }) {
    if (positionals.length > 0) {
      console.error('kassa: operation list takes no arguments (see --help).');
      return 1;
    }
    const limit = listLimit(values.limit);
    if (limit === null) return 1;
    const org = typeof values.org === 'string' ? values.org : undefined;
    const kind = typeof values.kind === 'string' ? values.kind : undefined;
    return printFromDatabase(config(), async (handle) => {
      const { listFlaggedOperations, operationHandlers } = await modules();
      return listFlaggedOperations(handle.db, operationHandlers, { org, kind, limit });
    });
  },
};

const operationResolveCommand: Command = {
  summary: 'Resolve a flagged provider call from one more read of the provider; prints JSON.',
  usage: '<operation>',
  help: `<operation> is the call's idempotency key (kassa operation list, or the payment's provider review
in the dashboard): kassa-pay-TX…-n (a card attempt), kassa-pay-TX… (the provider payment of Stripe's
form), kassa-cancel-TX… (an expired checkout's cancel of its payment), kassa-refund-RF… (a refund),
kassa-setup-… (a trial signup's or update-card page's card).

Kassa reads the provider once more and records what it shows, as the reconciler would have:
  decided       recorded as any answer: a charge paid and settled once, a decline recorded, a refund
                completed (the wallet debited) or failed (its hold released), a card saved
  not final     (a charge or card waiting for the customer's 3-D Secure, a charge or refund processing)
                recorded as the reconciler records it: the call is settled and its checkout's slot
                freed, and the payment, refund or checkout follows the provider from here (its sync,
                webhooks, the customer's page); prints the JSON and "kassa: <operation> is still waiting
                for the customer's authentication …" (or "still processing …"), exit 1
  no trace      the call never reached the provider: a card attempt is failed and its checkout may be
                paid again; a refund is failed and its amount may be refunded again; a setup's checkout
                may save a card again (refused while the call may still arrive)
  unreadable    refused: fix the provider's key or wait for it, then resolve it again

Nothing you say moves money, and nothing is ever charged again: only the provider's state is recorded.
A refusal changes nothing (exit 1). A call that is not flagged is refused, and so is a renewal try
(kassa renewal resolve <operation> paid|not-charged). Every resolution is in the organization's audit
log (provider_operation.resolved, actor operator). The JSON's "waiting" is what a not-final answer
still waits for (null when final).`,
  options: {},
  async run({ positionals, config }) {
    const [operation] = positionals;
    if (!operation || positionals.length !== 1) {
      console.error('kassa: operation resolve needs the <operation> to resolve (see --help).');
      return 1;
    }
    const cfg = config();
    let waiting = null as string | null;
    const code = await printFromDatabase(cfg, async (handle) => {
      const { resolveFlaggedOperation, operationHandlers } = await modules();
      const resolved = await resolveFlaggedOperation(
        createContext(cfg, handle),
        operationHandlers,
        operation,
        OPERATOR,
      );
      waiting = resolved.waiting;
      return resolved;
    });
    if (waiting === null) return code;
    // Recorded, but not final: said plainly, and not a success (as the other answers that are not final).
    console.error(
      `kassa: ${operation} is ${waiting}. Recorded as the reconciler records it (no longer flagged); the provider decides the rest, and Kassa follows it.`,
    );
    return 1;
  },
};

export const operationCommands: Record<string, Command> = {
  'operation list': operationListCommand,
  'operation resolve': operationResolveCommand,
};
