// Response schemas of the organization endpoints: the profile and the dashboard snapshot.
import { Type } from 'typebox';
import { Money, Shape, Timestamp } from '../../http/schemas.ts';
import { WalletBuckets, WalletMovement } from '../wallet/schemas.ts';

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
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'The organization profile; only the editable fields may be sent to PATCH.',
);

/** GET /organization/dashboard/ (production figures). */
export const DashboardSnapshot = Shape(
  {
    organization: Organization,
    wallet: WalletBuckets,
    stats: Shape({
      user_count: Type.Integer(),
      transaction_count: Type.Integer(),
      paid_transaction_count: Type.Integer(),
      paid_volume: Shape({ USD: Money, EUR: Money }),
    }),
    recent_activity: Type.Array(WalletMovement),
  },
  "The dashboard's overview of the production environment.",
);
