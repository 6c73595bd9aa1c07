// What a checkout charges. Prices are in the organization's price mode (a link's pricing_mode overrides
// it): HT prices get tax added, gross = HT × (1 + tax/100); TTC prices are the gross, and the HT part is
// gross / (1 + tax/100). Tax is worked out once on the total, half-up to the cent. No floats.
import { mulDivHalfUp } from '../../lib/money.ts';

export type PriceMode = 'HT' | 'TTC';

export interface CheckoutItem {
  /** The catalog product id, or null for an ad hoc item. */
  productId: string | null;
  name: string;
  /** Minor units, in the price mode's basis. */
  unitPrice: bigint;
  quantity: number;
}

export interface CheckoutTotals {
  subtotalHt: bigint;
  tax: bigint;
  gross: bigint;
}

export function lineAmount(item: CheckoutItem): bigint {
  return item.unitPrice * BigInt(item.quantity);
}

export function checkoutTotals(
  items: CheckoutItem[],
  priceMode: PriceMode,
  taxRateBp: bigint,
): CheckoutTotals {
  const sum = items.reduce((total, item) => total + lineAmount(item), 0n);
  const scale = 10_000n;
  if (priceMode === 'HT') {
    const gross = mulDivHalfUp(sum, scale + taxRateBp, scale);
    return { subtotalHt: sum, tax: gross - sum, gross };
  }
  const subtotalHt = mulDivHalfUp(sum, scale, scale + taxRateBp);
  return { subtotalHt, tax: sum - subtotalHt, gross: sum };
}
