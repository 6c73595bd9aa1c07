// How a link looks from outside: its derived availability, the dashboard record and the public totals.
import { GoneError } from '../../http/errors.ts';
import { formatAmount } from '../../lib/money.ts';
import {
  type CheckoutItem,
  type CheckoutTotals,
  checkoutTotals,
  type PriceMode,
} from '../checkout/pricing.ts';
import type { LinkUses, SalesFigures } from './store.ts';
import type { LinkLine, PaymentLinkRow, PricingMode } from './table.ts';

export type LinkStatus = 'active' | 'inactive' | 'expired' | 'exhausted' | 'deleted';

/** Derived, never stored: the first reason that makes the link unavailable, in this order. */
export function linkStatus(row: PaymentLinkRow, uses: number, now: Date): LinkStatus {
  if (row.deleted_at !== null) return 'deleted';
  if (row.is_active !== 1) return 'inactive';
  if (row.expires_at !== null && Date.parse(row.expires_at) <= now.getTime()) return 'expired';
  if (row.max_uses !== null && uses >= row.max_uses) return 'exhausted';
  return 'active';
}

const UNAVAILABLE: Record<Exclude<LinkStatus, 'active'>, string> = {
  inactive: 'This payment link is inactive.',
  expired: 'This payment link has expired.',
  exhausted: 'This payment link has reached its maximum number of uses.',
  deleted: 'This payment link has been deleted.',
};

/** 410 with a detail that says which way the link is unavailable; nothing when it is active. */
export function assertAvailable(row: PaymentLinkRow, uses: number, now: Date): void {
  const status = linkStatus(row, uses, now);
  if (status !== 'active') throw new GoneError(UNAVAILABLE[status]);
}

export function linkLines(row: PaymentLinkRow): LinkLine[] {
  return JSON.parse(row.products) as LinkLine[];
}

function presentLines(lines: LinkLine[]) {
  return lines.map((line) => ({
    product_id: line.product_id,
    name: line.name,
    unit_price: formatAmount(BigInt(line.unit_price)),
    quantity: line.quantity,
  }));
}

export function linkUrl(publicUrl: string, uuid: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/pay/${uuid}`;
}

/** The dashboard record. */
export function presentLink(
  row: PaymentLinkRow,
  sales: SalesFigures | undefined,
  counted: LinkUses | undefined,
  publicUrl: string,
  now: Date,
) {
  const uses = counted?.uses ?? 0;
  return {
    id: row.uuid,
    name: row.name,
    url: linkUrl(publicUrl, row.uuid),
    products: presentLines(linkLines(row)),
    currency: row.currency,
    pricing_mode: row.pricing_mode,
    expires_at: row.expires_at,
    max_uses: row.max_uses,
    uses_count: uses,
    is_active: row.is_active === 1,
    metadata: row.metadata === null ? null : (JSON.parse(row.metadata) as Record<string, unknown>),
    success_url: row.success_url,
    cancel_url: row.cancel_url,
    failed_url: row.failed_url,
    status: linkStatus(row, uses, now),
    environment: row.environment,
    stats: {
      views: row.views,
      checkouts_started: counted?.started ?? 0,
      payments_paid: sales?.paid ?? 0,
      revenue: formatAmount(sales?.revenue ?? 0n),
    },
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The price mode of checkout's arithmetic: TAX_EXCLUSIVE prices are HT, TAX_INCLUSIVE prices are TTC. */
export function priceModeOf(pricingMode: PricingMode): PriceMode {
  return pricingMode === 'TAX_EXCLUSIVE' ? 'HT' : 'TTC';
}

export function checkoutItems(lines: LinkLine[]): CheckoutItem[] {
  return lines.map((line) => ({
    productId: line.product_id,
    name: line.name,
    unitPrice: BigInt(line.unit_price),
    quantity: line.quantity,
  }));
}

/** What a checkout of these lines charges, by checkout's own arithmetic, so the preview always agrees. */
export function linkTotals(lines: LinkLine[], pricingMode: PricingMode, taxRateBp: bigint): CheckoutTotals {
  return checkoutTotals(checkoutItems(lines), priceModeOf(pricingMode), taxRateBp);
}

/** What the public /pay/{id} page shows: the merchant and the products, never the link's internal name. */
export function presentPreview(
  row: PaymentLinkRow,
  merchant: { name: string; website: string },
  totals: CheckoutTotals,
  taxRateBp: bigint,
) {
  return {
    id: row.uuid,
    merchant: { name: merchant.name, website: merchant.website || null },
    products: linkLines(row).map((line) => ({
      product_id: line.product_id,
      name: line.name,
      unit_price: formatAmount(BigInt(line.unit_price)),
      quantity: line.quantity,
      amount: formatAmount(BigInt(line.unit_price) * BigInt(line.quantity)),
    })),
    currency: row.currency,
    pricing_mode: row.pricing_mode,
    tax_rate_percent: formatAmount(taxRateBp),
    totals: {
      subtotal: formatAmount(totals.subtotalHt),
      tax: formatAmount(totals.tax),
      gross: formatAmount(totals.gross),
    },
    expires_at: row.expires_at,
  };
}
