// kassa renewal list | kassa renewal resolve <operation> paid|not-charged: the operator settles the
// renewal tries flagged for review (src/modules/subscriptions/resolve.ts).
import { createContext } from '../context.ts';
import { OPERATOR } from '../modules/audit/record.ts';
import type { RenewalResolution } from '../modules/subscriptions/resolve.ts';
import { listLimit } from './args.ts';
import type { Command } from './commands.ts';
import { printFromDatabase } from './database.ts';

// The renewal worker's module (checkout, payments, providers) is loaded by these commands only, so the
// other commands start as quickly as before.
const resolver = () => import('../modules/subscriptions/resolve.ts');

const RESOLUTIONS: Record<string, RenewalResolution> = { paid: 'paid', 'not-charged': 'not_charged' };

const renewalListCommand: Command = {
  summary: 'List the renewal tries flagged for review as JSON, oldest first (each waits for you).',
  usage: '[--org <slug>] [--limit <n>]',
  help: `Options:
  --org      only this organization's tries (its slug)
  --limit    at most this many (default 100, at most 1000)

Prints a JSON array of {operation, organization, subscription_id, environment, transaction_id,
period_index, cycle_status, provider, why, reason, flagged_at}. why is "unknown" when the reconciler
could not establish the outcome of the charge by its last read, "refused" when the provider refused
every call of the try for 72 hours (a revoked or restricted key, a rate limit). The cycle is not tried
again until you resolve it with "kassa renewal resolve <operation> paid|not-charged".`,
  options: { org: { type: 'string' }, limit: { type: 'string' } },
  async run({ values, positionals, config }) {
    if (positionals.length > 0) {
      console.error('kassa: renewal list takes no arguments (see --help).');
      return 1;
    }
    const limit = listLimit(values.limit);
    if (limit === null) return 1;
    const org = typeof values.org === 'string' ? values.org : undefined;
    return printFromDatabase(config(), async (handle) => {
      const { listFlaggedRenewals } = await resolver();
      return listFlaggedRenewals(handle.db, { org, limit });
    });
  },
};

const renewalResolveCommand: Command = {
  summary: 'Resolve a flagged renewal try as paid or not charged, once the provider agrees; prints JSON.',
  usage: '<operation> paid|not-charged [--provider-payment-id <id>]',
  help: `<operation> is the try's key, kassa-renew-{cycle}-{try} (kassa renewal list, or the payment's
provider review in the dashboard). Look at the provider first, then say what happened:

  paid          the try charged the card. Kassa reads the provider once more and records the charge:
                the renewal payment is paid and settled once, the period paid, the receipt mailed.
  not-charged   the try charged nothing. A decline the provider shows goes on through the dunning;
                a try the provider has no charge of is made again at once (a refused try under the same
                key, otherwise under the next one, as for a try that never reached the provider).

Options:
  --provider-payment-id   the provider's payment (Stripe: pi_…) to read instead of searching by the
                          renewal's reference; it must be this renewal's payment

Kassa acts only on what the provider shows: a statement it contradicts (a charge you call not charged,
a decline you call paid, no charge you call paid), a charge not decided yet, or a provider that cannot
be read is refused and nothing changes. A try that is not flagged is refused. The key of another kind
of call (kassa-pay-…, kassa-refund-…, kassa-setup-…) is refused with the command that resolves it,
kassa operation resolve <operation>. Every resolution is in the organization's audit log
(subscription.renewal_resolved, actor operator).`,
  options: { 'provider-payment-id': { type: 'string' } },
  async run({ values, positionals, config }) {
    const [operation, statement] = positionals;
    const resolution = statement === undefined ? undefined : RESOLUTIONS[statement];
    if (!operation || positionals.length !== 2 || !resolution) {
      console.error('kassa: renewal resolve needs <operation> and paid or not-charged (see --help).');
      return 1;
    }
    const providerPaymentId = values['provider-payment-id'];
    if (providerPaymentId !== undefined && (typeof providerPaymentId !== 'string' || !providerPaymentId)) {
      console.error('kassa: --provider-payment-id needs the id of the provider payment.');
      return 1;
    }
    const cfg = config();
    return printFromDatabase(cfg, async (handle) => {
      const { resolveFlaggedRenewal } = await resolver();
      return resolveFlaggedRenewal(
        createContext(cfg, handle),
        { operation, resolution, providerPaymentId: providerPaymentId ?? null },
        OPERATOR,
      );
    });
  },
};

export const renewalCommands: Record<string, Command> = {
  'renewal list': renewalListCommand,
  'renewal resolve': renewalResolveCommand,
};
