// The ordered list of migrations. Forward-only: a shipped migration is never edited.
import type { Migration } from 'kysely';
import type { DatabaseKind } from '../../config.ts';
import { foundation } from './001-foundation.ts';
import { checkoutPayments } from './002-checkout-payments.ts';
import { walletRefundsPayouts } from './003-wallet-refunds-payouts.ts';
import { webhooks } from './004-webhooks.ts';
import { paymentLinks } from './005-payment-links.ts';
import { developer } from './006-developer.ts';
import { retention } from './007-retention.ts';
import { hardening } from './008-hardening.ts';
import { providerV2 } from './009-provider-v2.ts';
import { accounts } from './010-accounts.ts';
import { integrate } from './011-integrate.ts';
import { dashboard } from './012-dashboard.ts';
import { subscriptions } from './013-subscriptions.ts';
import { renewals } from './014-renewals.ts';
import { webhookWriteOnce } from './015-webhook-write-once.ts';
import { eventClaimIndexes } from './016-event-claim-indexes.ts';
import { eventNotifyTrigger } from './017-event-notify-trigger.ts';
import { moneyInvariants } from './018-money-invariants.ts';
import { secondFactorTries } from './019-second-factor-tries.ts';
import { refundProviderConflicts } from './020-refund-provider-conflicts.ts';
import { loginFailures } from './021-login-failures.ts';
import { webhookPreviousSecret } from './022-webhook-previous-secret.ts';
import { renewalProviderErrors } from './023-renewal-provider-errors.ts';
import { webhookLogReferences } from './024-webhook-log-references.ts';
import { webhookEventReference } from './025-webhook-event-reference.ts';
import { webhookClaimLeases } from './026-webhook-claim-leases.ts';
import { eventFeed } from './027-event-feed.ts';
import { eventFeedSchema } from './028-event-feed-schema.ts';

export function migrations(kind: DatabaseKind): Record<string, Migration> {
  return {
    '001_foundation': foundation(kind),
    '002_checkout_payments': checkoutPayments(kind),
    '003_wallet_refunds_payouts': walletRefundsPayouts(kind),
    '004_webhooks': webhooks(kind),
    '005_payment_links': paymentLinks(kind),
    '006_developer': developer(kind),
    '007_retention': retention(),
    '008_hardening': hardening(),
    '009_provider_v2': providerV2(kind),
    '010_accounts': accounts(kind),
    '011_integrate': integrate(),
    '012_dashboard': dashboard(kind),
    '013_subscriptions': subscriptions(kind),
    '014_renewals': renewals(),
    '015_webhook_write_once': webhookWriteOnce(),
    '016_event_claim_indexes': eventClaimIndexes(),
    '017_event_notify_trigger': eventNotifyTrigger(kind),
    '018_money_invariants': moneyInvariants(kind),
    '019_second_factor_tries': secondFactorTries(),
    '020_refund_provider_conflicts': refundProviderConflicts(),
    '021_login_failures': loginFailures(),
    '022_webhook_previous_secret': webhookPreviousSecret(),
    '023_renewal_provider_errors': renewalProviderErrors(),
    '024_webhook_log_references': webhookLogReferences(kind),
    '025_webhook_event_reference': webhookEventReference(kind),
    '026_webhook_claim_leases': webhookClaimLeases(kind),
    '027_event_feed': eventFeed(kind),
    '028_event_feed_schema': eventFeedSchema(kind),
  };
}
