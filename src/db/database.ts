// The whole database as Kysely sees it, composed from each module's table types.
import type { Kysely, Transaction } from 'kysely';
import type { ApiKeyTables } from '../modules/api-keys/table.ts';
import type { AuditTables } from '../modules/audit/table.ts';
import type { AuthTables } from '../modules/auth/table.ts';
import type { CheckoutTables } from '../modules/checkout/table.ts';
import type { EventTables } from '../modules/events/table.ts';
import type { IdempotencyTables } from '../modules/idempotency/table.ts';
import type { MemberTables } from '../modules/members/table.ts';
import type { OrganizationTables } from '../modules/organizations/table.ts';
import type { PaymentLinkTables } from '../modules/payment-links/table.ts';
import type { PaymentTables } from '../modules/payments/table.ts';
import type { PayoutTables } from '../modules/payouts/table.ts';
import type { ProductTables } from '../modules/products/table.ts';
import type { RefundTables } from '../modules/refunds/table.ts';
import type { SubscriptionTables } from '../modules/subscriptions/table.ts';
import type { WalletTables } from '../modules/wallet/table.ts';
import type { WebhookTables } from '../modules/webhooks/table.ts';
import type { ProviderTables } from '../provider/operations/table.ts';

export interface Database
  extends OrganizationTables,
    AuthTables,
    ApiKeyTables,
    ProductTables,
    EventTables,
    CheckoutTables,
    PaymentTables,
    WalletTables,
    RefundTables,
    PayoutTables,
    WebhookTables,
    PaymentLinkTables,
    IdempotencyTables,
    MemberTables,
    AuditTables,
    SubscriptionTables,
    ProviderTables {}

/** A connection or an open transaction: store functions take either as their first argument. */
export type Executor = Kysely<Database> | Transaction<Database>;
