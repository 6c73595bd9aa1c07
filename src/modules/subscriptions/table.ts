// Table types of the subscriptions module: plans, subscriptions and their cycles (one per period).
import type { Generated, Selectable } from 'kysely';
import type { Environment } from '../api-keys/table.ts';
import type { CycleStatus, SubscriptionStatus } from './dunning.ts';
import type { Interval } from './periods.ts';

export interface SubscriptionPlansTable {
  id: Generated<number>;
  /** plan_ + 14 base62 */
  public_id: string;
  organization_id: number;
  environment: Environment;
  name: string;
  /** Minor units of `currency`, > 0. */
  amount: number;
  currency: 'USD' | 'EUR';
  interval: Interval;
  /** 1–12 */
  interval_count: number;
  /** 0–90 */
  trial_days: Generated<number>;
  is_active: Generated<number>;
  created_at: string;
  updated_at: string;
}

export interface SubscriptionsTable {
  id: Generated<number>;
  /** SU + 16 base62 */
  public_id: string;
  organization_id: number;
  environment: Environment;
  plan_id: number;
  status: SubscriptionStatus;
  customer_email: string;
  customer_name: string | null;
  provider: string;
  provider_customer_id: string;
  /** The saved card off-session charges name (Stripe: pm_…). */
  payment_method_id: string;
  card_brand: string;
  card_last4: string;
  card_exp_month: number;
  card_exp_year: number;
  /** The end of the trial, or the signup without one: period k starts at anchor + k × interval (periods.ts). */
  anchor_at: string;
  trial_end: string | null;
  /** When the next period starts and its cycle is due; null once nothing more is billed. */
  next_renewal_at: string | null;
  /** Sandbox only: the subscription's frozen time, moved by advance-clock (migration 014); null: real time. */
  test_clock_at: string | null;
  cancel_at_period_end: Generated<number>;
  canceled_at: string | null;
  cancel_reason: 'merchant' | 'payment_failed' | null;
  created_at: string;
  updated_at: string;
}

export interface SubscriptionCyclesTable {
  id: Generated<number>;
  subscription_id: number;
  organization_id: number;
  environment: Environment;
  period_index: number;
  period_start: string;
  period_end: string;
  /** Minor units, the plan's amount when the cycle was made. */
  amount: number;
  currency: 'USD' | 'EUR';
  status: CycleStatus;
  /** Tries made, 0–5 (dunning.ts). */
  attempts: Generated<number>;
  first_attempt_at: string | null;
  /** When the worker next looks at the cycle (a try, or the give-up time); null when it is over. */
  next_attempt_at: string | null;
  needs_new_card: Generated<number>;
  /** The lease: the worker that claimed the cycle and until when (both set or both null). */
  leased_by: string | null;
  lease_until: string | null;
  /**
   * When the provider began refusing the try now waiting (a refused key, a rate limit:
   * renewal-answers.ts), on the subscription's clock; null when it is not refusing (migration 023).
   */
  provider_errors_since: string | null;
  /** The renewal payment (payments.id) of the successful try. */
  payment_id: number | null;
  created_at: string;
  updated_at: string;
}

export type SubscriptionPlanRow = Selectable<SubscriptionPlansTable>;
export type SubscriptionRow = Selectable<SubscriptionsTable>;
export type SubscriptionCycleRow = Selectable<SubscriptionCyclesTable>;

export interface SubscriptionTables {
  subscription_plans: SubscriptionPlansTable;
  subscriptions: SubscriptionsTable;
  subscription_cycles: SubscriptionCyclesTable;
}
