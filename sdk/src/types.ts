// The shapes of the API-key API, as the interface describes them.
export type Currency = 'USD' | 'EUR';

export type CatalogItem = { id: string; quantity?: number };
export type AdHocItem = { name: string; unit_price: number; quantity?: number };

export interface CheckoutCreateParams {
  billing_country: string;
  billing_postal_code?: string;
  billing_first_name: string;
  billing_last_name: string;
  billing_email: string;
  billing_phone?: string;
  currency?: Currency;
  products: (CatalogItem | AdHocItem)[];
  successUrl?: string;
  failedUrl?: string;
  cancelUrl?: string;
  sandbox_simulate?:
    | 'payment_failed'
    | 'checkout_canceled'
    | 'canceled'
    | 'success_pending_deposit'
    | 'checkout_pending';
  /** Your own key-value data: at most 20 keys of at most 40 characters, string values of at most 500. */
  metadata?: Record<string, string>;
  /** Your own reference (an order or cart id), at most 200 characters. */
  client_reference_id?: string;
}

export interface SyncStatusParams {
  checkout_id: string;
}

export interface SyncStatus {
  checkout_id: string;
  order_id: string;
  status: 'SUCCESS' | 'FAILED' | 'CANCELED' | 'CHECKOUT_PENDING';
  transaction_id: string | null;
  payment_status: PaymentStatus | null;
  redirect_url: string | null;
}

export interface CheckoutSession {
  checkout_id: string;
  order_id: string;
  checkout_url: string;
  token: string;
  expires_at: number;
}

export type PaymentStatus =
  | 'paid'
  | 'failed'
  | 'refund_pending'
  | 'refunded'
  | 'canceled'
  | 'processing'
  | 'pending';

export interface DepositAttempt {
  status: string;
  paymentId: string;
  attemptedAt: string;
  errorMessage: string | null;
  paymentMethod: string;
}

export interface Payment {
  id: string;
  amount: string;
  net_amount: string;
  status: PaymentStatus;
  currency: Currency;
  payer_email: string | null;
  products: { id: string; name: string }[];
  depositAttempts: DepositAttempt[];
  fee_percent: number;
  amount_breakdown: { gross_ttc: string; currency: Currency; net_usd: string };
  created_at: string;
  updated_at: string;
  /** The checkout's metadata; {} when none was given. */
  metadata: Record<string, string>;
  client_reference_id: string | null;
  /** The subscription (SU…) this payment charges for; null for every other payment. */
  subscription_id: string | null;
}

export interface PaymentListParams {
  status?: PaymentStatus;
  /** The checkout id (CO…) the payment came from. */
  order_id?: string;
  client_reference_id?: string;
  /** ISO 8601; payments created strictly after. */
  created_after?: string;
  /** ISO 8601; payments created strictly before. */
  created_before?: string;
  page?: number;
  page_size?: number;
}

export interface RefundCreateParams {
  reason: string;
  amount?: string;
}

export interface RefundCreated {
  /** Public refund id (RF…), as GET /refunds/ and the webhooks show it. */
  id: string;
  /** Public id (TX…) of the refunded payment. */
  transaction: string;
  status: RefundStatus;
  refund_id: number;
  refund_public_id: string;
  transaction_id: number;
  amount: string;
  currency: Currency;
  amount_usd: string;
  amount_in_cents: number;
}

export type RefundStatus = 'pending' | 'processing' | 'completed' | 'failed' | 'rejected';

export interface Refund {
  id: string;
  transaction_id: string;
  amount: string;
  currency: Currency;
  amount_in_cents: number | null;
  amount_usd: string | null;
  reason: string;
  status: RefundStatus;
  created_at: string;
  updated_at: string;
}

export interface RefundListParams {
  status?: RefundStatus;
  created_at__gte?: string;
  created_at__lte?: string;
  search?: string;
  ordering?: string;
  page?: number;
  page_size?: number;
}

export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  results: T[];
}

interface EventBase {
  livemode: boolean;
}

export interface TransactionStatusChanged extends EventBase {
  event: 'transaction.status_changed';
  transaction_id: string | null;
  order_id: string;
  amount: string;
  gross_amount: string;
  fee_percent?: number;
  status: PaymentStatus;
  currency: Currency;
  depositAttempts: DepositAttempt[];
  /** True when the built-in simulator processed the payment; absent when a checkout is canceled before any attempt. */
  simulated?: boolean;
  created_at: string | null;
  updated_at: string | null;
  metadata: Record<string, string>;
  client_reference_id: string | null;
  /** The subscription (SU…) this payment charges for; null for every other payment. */
  subscription_id: string | null;
}

export interface RefundStatusChanged extends EventBase {
  event: 'refund.status_changed';
  refund_id: string;
  transaction_id: string;
  amount: string;
  currency: Currency;
  amount_usd?: string;
  amount_in_cents?: number;
  status: RefundStatus;
  reason: string;
  created_at: string | null;
  updated_at: string | null;
}

export interface PayoutStatusChanged extends EventBase {
  event: 'payout.status_changed';
  payout_id: string;
  amount: string;
  status: 'pending' | 'completed' | 'rejected';
  currency: 'USD';
  created_at: string | null;
  updated_at: string | null;
}

export interface WebhookTest extends EventBase {
  event: 'webhook.test';
  message: string;
}

export type WebhookEvent = TransactionStatusChanged | RefundStatusChanged | PayoutStatusChanged | WebhookTest;
