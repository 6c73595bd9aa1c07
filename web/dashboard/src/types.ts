// Shapes of the API responses the dashboard reads (interface.md and decisions.md). Fields the
// contract leaves open are optional, and the pages show them only when present.

export type Environment = 'production' | 'sandbox';
export type Currency = 'USD' | 'EUR';

export interface Organization {
  id: number;
  slug: string;
  name: string;
  website: string;
  contact_email: string;
  telegram: string;
  price_mode: 'HT' | 'TTC';
  fee_percent: string;
  tax_rate_percent: string;
  rolling_reserve_percent: string;
  rolling_reserve_days: number;
  min_payment: string;
  max_payment: string;
  max_active_api_keys: number;
  status: string;
  /** IANA zone the dashboard shows times in. */
  time_zone: string;
  /** The dashboard opens in test mode (the demo merchant). */
  test_mode_default: boolean;
  created_at: string;
  updated_at: string;
  [field: string]: unknown;
}

export interface Session {
  expires_at?: string;
  user: { id: number; email: string; name: string };
  organization: { id: number; slug: string; name: string };
  /** Team and two-factor (older servers leave them out). */
  role?: string;
  two_factor_enabled?: boolean;
  two_factor_setup_required?: boolean;
}

export interface WalletBuckets {
  currency: string;
  balance: string;
  reserve: string;
  held: string;
  available: string;
}

export interface WalletMovement {
  id: number;
  type: string;
  reference: string;
  amount: string;
  balance_change: string;
  reserve_change: string;
  held_change: string;
  created_at: string;
}

export interface Wallet extends WalletBuckets {
  environment?: Environment;
  entries: WalletMovement[];
}

export interface DashboardSnapshot {
  organization: Organization;
  /** null for a role that may not read the wallet (developer). */
  wallet?: WalletBuckets | null;
  stats?: Record<string, number | string | Record<string, string>>;
  /** null for a role that may not read the wallet (developer). */
  recent_activity?: WalletMovement[] | null;
  [field: string]: unknown;
}

export interface DepositAttempt {
  status: string;
  paymentId: string;
  attemptedAt: string;
  errorMessage: string | null;
  paymentMethod: string;
  cardBrand?: string | null;
  cardLast4?: string | null;
}

export interface Refund {
  id: string;
  transaction_id: string;
  amount: string;
  currency: string;
  amount_in_cents: number | null;
  amount_usd: string | null;
  reason: string;
  status: string;
  created_at: string;
  updated_at: string;
}

export interface WebhookEventSummary {
  id?: string | number;
  event?: string;
  status?: string;
  created_at?: string;
  delivered_at?: string | null;
  attempts?: number | unknown[];
  response_status?: number | null;
  [field: string]: unknown;
}

/** A provider call of a payment whose outcome is not known: being read back, or flagged for review. */
export interface ProviderReview {
  state: 'confirming' | 'flagged';
  operation: string;
  reason: string | null;
  since: string;
}

export interface Payment {
  id: string;
  amount: string;
  net_amount?: string;
  fee_amount?: string;
  fee?: string;
  status: string;
  currency: string;
  payer_email?: string | null;
  products?: { id: string; name: string }[];
  depositAttempts: DepositAttempt[];
  fee_percent?: number | string;
  amount_breakdown?: { gross_ttc: string; currency: string; net_usd: string };
  environment?: Environment;
  livemode?: boolean;
  order_id?: string;
  checkout_id?: string;
  payment_link_id?: string | null;
  refunded_amount?: string;
  refundable_amount?: string;
  simulated?: boolean;
  provider_review?: ProviderReview | null;
  refunds?: Refund[];
  events?: WebhookEventSummary[];
  webhook_deliveries?: WebhookEventSummary[];
  created_at: string;
  updated_at: string;
}

export interface RefundCreated {
  status: string;
  refund_id: number;
  refund_public_id: string;
  transaction_id: number | string;
  amount: string;
  currency: string;
  amount_usd: string;
  amount_in_cents: number;
}

export interface Product {
  id: string;
  name: string;
  description: string;
  unit_price: string;
  currency: Currency;
  is_active: boolean;
  created_at: string;
  updated_at: string;
}

export interface PaymentLink {
  id: string;
  name: string;
  url: string;
  products: { product_id: string; name: string; unit_price: string; quantity: number }[];
  currency: Currency;
  pricing_mode: 'TAX_EXCLUSIVE' | 'TAX_INCLUSIVE' | null;
  expires_at: string | null;
  max_uses: number | null;
  uses_count: number;
  is_active: boolean;
  metadata: Record<string, unknown> | null;
  status: string;
  environment?: Environment;
  stats: { views: number; checkouts_started: number; payments_paid: number; revenue: string };
  created_at: string;
  updated_at: string;
}

export interface ApiKey {
  id: number;
  name: string;
  prefix: string;
  scopes: string[];
  environment: Environment;
  status: 'active' | 'revoked';
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  raw_key?: string;
}

export interface WebhookConfig {
  endpoint_url: string | null;
  secret_preview?: string | null;
  /** Until then the secret the last rotation replaced also signs webhook-signature; null when it does not. */
  previous_secret_expires_at?: string | null;
  /** Why nothing can be delivered to endpoint_url until it is set again; null when deliveries are sent. */
  endpoint_problem?: string | null;
  raw_secret?: string;
  [field: string]: unknown;
}

export interface DeliveryAttempt {
  attempt?: number;
  url?: string;
  response_body?: string | null;
  attempted_at?: string;
  created_at?: string;
  response_status?: number | null;
  status_code?: number | null;
  duration_ms?: number | null;
  error?: string | null;
  [field: string]: unknown;
}

export interface Delivery {
  id: string | number;
  event: string;
  status: string;
  endpoint_url?: string;
  delivery_id?: string;
  transaction_id?: string | null;
  subject?: string | null;
  event_id?: number;
  livemode?: boolean;
  last_error?: string | null;
  redelivery_of?: string | null;
  delivered_at?: string | null;
  attempts?: DeliveryAttempt[] | number;
  attempt_count?: number;
  next_attempt_at?: string | null;
  last_response_status?: number | null;
  response_status?: number | null;
  payload?: unknown;
  created_at: string;
  updated_at?: string;
  [field: string]: unknown;
}

export interface ReceivedWebhook {
  id?: string | number;
  received_at?: string;
  created_at?: string;
  headers?: Record<string, string>;
  event?: string | null;
  delivery_id?: string | null;
  content_type?: string | null;
  body?: string;
  body_encoding?: 'utf8' | 'base64';
  raw_body?: string;
  signature_valid?: boolean | null;
  [field: string]: unknown;
}

export interface PayoutDestinationSummary {
  id: string;
  type: 'iban' | 'us_account';
  account_holder: string;
  label: string;
}

export interface PayoutDestination extends PayoutDestinationSummary {
  country: string;
  bic: string | null;
  routing_number: string | null;
  last4: string;
  environment: Environment;
  created_at: string;
}

export interface Payout {
  id: string;
  amount: string;
  currency: string;
  status: string;
  destination?: PayoutDestinationSummary | null;
  created_at: string;
  updated_at: string;
  [field: string]: unknown;
}

export interface SearchResult {
  type: 'payment' | 'refund';
  id: string;
  /** The payment itself, or the refunded payment. */
  payment_id: string;
  summary: string;
  status: string;
  amount: string;
  currency: string;
  environment: Environment;
  created_at: string;
}

export interface MailSummary {
  id: string;
  to: string;
  subject: string;
  date: string | null;
  preview: string;
}

export interface MailMessage {
  id: string;
  from: string;
  to: string;
  subject: string;
  date: string | null;
  text: string;
}

export interface Plan {
  id: string;
  name: string;
  amount: string;
  currency: Currency;
  interval: 'day' | 'week' | 'month' | 'year';
  interval_count: number;
  trial_days: number;
  environment: Environment;
  is_active: boolean;
  signup_url: string;
  stats: { active_subscriptions: number; mrr: string };
  created_at: string;
  updated_at: string;
}

export interface SubscriptionCycle {
  period_index: number;
  period_start: string;
  period_end: string;
  amount: string;
  currency: Currency;
  status: string;
  attempts: number;
  next_attempt_at: string | null;
  transaction_id: string | null;
}

export interface Subscription {
  id: string;
  plan: { id: string; name: string };
  status: 'trialing' | 'active' | 'past_due' | 'canceled';
  environment: Environment;
  customer_email: string;
  customer_name: string | null;
  card: { brand: string; last4: string; exp_month: number; exp_year: number };
  current_period_start: string;
  current_period_end: string;
  trial_end: string | null;
  cancel_at_period_end: boolean;
  canceled_at: string | null;
  cancel_reason: 'merchant' | 'payment_failed' | null;
  /** Sandbox: the test clock's time once advanced; null: real time. */
  test_clock_at: string | null;
  created_at: string;
  updated_at: string;
  cycles?: SubscriptionCycle[];
}
