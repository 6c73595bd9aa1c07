// Response schemas of the organization endpoints: the profile and the dashboard snapshot.
import { Type } from 'typebox';
import { Environment, Money, Shape, Timestamp } from '../../http/schemas.ts';
import { WalletBuckets, WalletMovement } from '../wallet/schemas.ts';

/** ?environment= of the pages that follow test mode: production (default) or sandbox. */
export const EnvironmentQuery = Type.Object({
  environment: Type.Optional(
    Type.Enum(['production', 'sandbox'], { description: 'production (default) or sandbox.' }),
  ),
});

/** GET/PATCH /organization/: name, website, contact_email, telegram and price_mode are editable. */
export const Organization = Shape(
  {
    id: Type.Integer(),
    slug: Type.String(),
    name: Type.String(),
    website: Type.String(),
    contact_email: Type.String(),
    telegram: Type.String(),
    price_mode: Type.Enum(['HT', 'TTC']),
    fee_percent: Money,
    tax_rate_percent: Money,
    rolling_reserve_percent: Money,
    rolling_reserve_days: Type.Integer(),
    min_payment: Money,
    max_payment: Money,
    max_active_api_keys: Type.Integer(),
    status: Type.String(),
    time_zone: Type.String({ description: 'IANA time zone the dashboard shows times in; editable.' }),
    test_mode_default: Type.Boolean({
      description: 'Whether the dashboard opens in test mode (the demo merchant); operator-set.',
    }),
    redirect_origins: Type.Array(Type.String(), {
      description:
        'Editable: the https://host[:port] origins a public payment-link start may redirect the customer to (successUrl, failedUrl, cancelUrl).',
    }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'The organization profile; only the editable fields (name, website, contact_email, telegram, price_mode, time_zone, redirect_origins) may be sent to PATCH.',
);

/** GET /organization/dashboard/ (production figures; ?environment=sandbox for test mode). */
export const DashboardSnapshot = Shape(
  {
    organization: Organization,
    environment: Environment,
    wallet: Type.Union([WalletBuckets, Type.Null()], {
      description: 'The wallet in USD; null for a role that may not read the wallet (developer).',
    }),
    stats: Shape({
      user_count: Type.Integer(),
      transaction_count: Type.Integer(),
      paid_transaction_count: Type.Integer(),
      paid_volume: Shape({ USD: Money, EUR: Money }),
    }),
    recent_activity: Type.Union([Type.Array(WalletMovement), Type.Null()], {
      description:
        'The latest wallet movements, newest first; null for a role that may not read the wallet (developer).',
    }),
  },
  "The dashboard's overview of one environment (production unless ?environment=sandbox).",
);
