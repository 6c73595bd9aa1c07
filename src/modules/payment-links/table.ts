// Payment links: a shareable snapshot of catalog products from which customers start hosted checkouts.
import type { Generated, Selectable } from 'kysely';
import type { Environment } from '../api-keys/table.ts';

export type PricingMode = 'TAX_EXCLUSIVE' | 'TAX_INCLUSIVE';

/** One line of the snapshot taken at creation; later catalog changes never reach it. */
export interface LinkLine {
  product_id: string;
  name: string;
  /** Minor units of the link currency. */
  unit_price: number;
  quantity: number;
}

export interface PaymentLinksTable {
  id: Generated<number>;
  /** The public identifier: the UUID in /payment-links/{id}/, /pay/{id} and payments.payment_link_id. */
  uuid: string;
  organization_id: number;
  /** Always production for now (see service.ts); kept so checkouts know their environment. */
  environment: Environment;
  name: string;
  currency: 'USD' | 'EUR';
  pricing_mode: PricingMode;
  /** JSON: LinkLine[] */
  products: string;
  expires_at: string | null;
  max_uses: number | null;
  /**
   * Retired by migration 008 (always 0): uses are counted from the link's checkouts and payments
   * (store.usesByLink), so a checkout that ends without a payment gives its use back.
   */
  uses_count: Generated<number>;
  views: Generated<number>;
  is_active: Generated<number>;
  /** JSON object, or null. */
  metadata: string | null;
  /** Return URLs set by the merchant, used when a start sends none (any http(s) URL). */
  success_url: string | null;
  cancel_url: string | null;
  failed_url: string | null;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
}

export type PaymentLinkRow = Selectable<PaymentLinksTable>;

export interface PaymentLinkTables {
  payment_links: PaymentLinksTable;
}
