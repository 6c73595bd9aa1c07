// Hosted checkout sessions: what the customer is asked to pay, and how to reach them afterwards.
import type { Generated, Selectable } from 'kysely';
import type { Environment } from '../api-keys/table.ts';

export interface CheckoutSessionsTable {
  id: Generated<number>;
  /** CO + 20 base62: the checkout_id and order_id of the interface. */
  public_id: string;
  /** SHA-256 (hex) of the 256-bit token; the token itself is never stored. */
  token_hash: string;
  organization_id: number;
  environment: Environment;
  /** The payment link's uuid when the checkout was started from a link. */
  payment_link_id: string | null;
  currency: 'USD' | 'EUR';
  /** How the items' unit prices are meant: HT (before tax) or TTC (tax included). */
  price_mode: 'HT' | 'TTC';
  tax_rate_bp: number;
  /** JSON: [{product_id: string | null, name, unit_price (minor units, price_mode basis), quantity}] */
  items: string;
  /** Minor units of `currency`: total before tax, the tax, and the gross TTC charged. */
  subtotal_ht: number;
  tax_amount: number;
  gross: number;
  billing_country: string;
  billing_postal_code: string | null;
  billing_first_name: string;
  billing_last_name: string;
  billing_email: string;
  billing_phone: string | null;
  success_url: string | null;
  failed_url: string | null;
  cancel_url: string | null;
  /** The sandbox script (sandbox_simulate), null in production. */
  simulate: string | null;
  /** Set when the customer canceled. */
  canceled_at: string | null;
  /** A card attempt is in flight with the provider until this time; a second one waits. */
  attempt_locked_until: string | null;
  expires_at: string;
  created_at: string;
  updated_at: string;
  /** JSON of the merchant's flat {key: string} metadata (migration 011); null when none. */
  metadata: string | null;
  /** The merchant's own reference (migration 011), e.g. its order or cart id. */
  client_reference_id: string | null;
  /** The subscription (SU…) this checkout's payment is for (migration 014): a renewal or a signup. */
  subscription_public_id: string | null;
  /** A signup checkout's plan (subscription_plans.id); null for every other checkout. */
  subscription_plan_id: number | null;
  /** The provider's customer a signup's card is saved on, once made. */
  provider_customer_id: string | null;
  /** The provider's setup saving a trial signup's card (no charge), while it waits for 3-D Secure. */
  signup_setup_id: string | null;
  /** When the signup made its subscription (a trial's checkout has no payment to say so). */
  completed_at: string | null;
  /** card_update: a subscription's update-card page (saves a card, charges nothing); null otherwise. */
  purpose: 'card_update' | null;
}

export type CheckoutSessionRow = Selectable<CheckoutSessionsTable>;

export interface CheckoutTables {
  checkout_sessions: CheckoutSessionsTable;
}
