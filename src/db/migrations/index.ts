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

export function migrations(kind: DatabaseKind): Record<string, Migration> {
  return {
    '001_foundation': foundation(kind),
    '002_checkout_payments': checkoutPayments(kind),
    '003_wallet_refunds_payouts': walletRefundsPayouts(kind),
    '004_webhooks': webhooks(kind),
    '005_payment_links': paymentLinks(kind),
    '006_developer': developer(kind),
    '007_retention': retention(),
  };
}
