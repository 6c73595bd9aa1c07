// Reading a checkout request: the customer, the return addresses, the sandbox script and the items,
// each error a 400 that names the field. Shared by checkout creation and a payment link's start.
import type { Executor } from '../../db/database.ts';
import { ValidationError } from '../../http/errors.ts';
import { toBigInt } from '../../lib/money.ts';
import { isSimulateValue, SIMULATE_VALUES, type SimulateValue } from '../../provider/simulator/script.ts';
import type { Environment } from '../api-keys/table.ts';
import { findSellableProducts, parsePrice } from '../products/service.ts';
import type { CheckoutItem } from './pricing.ts';
import type { CheckoutItemInput, CreateCheckoutInput } from './schemas.ts';

export interface BillingDetails {
  country: string;
  postalCode: string | null;
  firstName: string;
  lastName: string;
  email: string;
  phone: string | null;
}

export interface ReturnUrls {
  success: string | null;
  failed: string | null;
  cancel: string | null;
}

function requiredText(field: string, value: string): string {
  const trimmed = value.trim();
  if (!trimmed) throw new ValidationError(`${field}: may not be blank.`);
  return trimmed;
}

function optionalText(value: string | null | undefined): string | null {
  const trimmed = value?.trim();
  return trimmed ? trimmed : null;
}

export function returnUrl(field: string, value: string | null | undefined): string | null {
  if (value === null || value === undefined || value === '') return null;
  if (!/^https?:\/\/[^\s/?#]+/i.test(value)) throw new ValidationError(`${field}: must be an http(s) URL.`);
  return value;
}

type BillingBody = Pick<
  CreateCheckoutInput,
  | 'billing_country'
  | 'billing_postal_code'
  | 'billing_first_name'
  | 'billing_last_name'
  | 'billing_email'
  | 'billing_phone'
  | 'successUrl'
  | 'failedUrl'
  | 'cancelUrl'
>;

/** The customer and return addresses of a creation (or link start) body, cleaned. */
export function parseBillingAndUrls(body: BillingBody): { billing: BillingDetails; urls: ReturnUrls } {
  return {
    billing: {
      country: requiredText('billing_country', body.billing_country).toUpperCase(),
      postalCode: optionalText(body.billing_postal_code),
      firstName: requiredText('billing_first_name', body.billing_first_name),
      lastName: requiredText('billing_last_name', body.billing_last_name),
      email: body.billing_email.trim(),
      phone: optionalText(body.billing_phone),
    },
    urls: {
      success: returnUrl('successUrl', body.successUrl),
      failed: returnUrl('failedUrl', body.failedUrl),
      cancel: returnUrl('cancelUrl', body.cancelUrl),
    },
  };
}

/**
 * sandbox_simulate: sandbox keys on /sandbox/api/ only, one of the interface's values. The
 * contract refuses a production key "that sends the field", so presence is what counts: an
 * explicit null from a production key is a 400 too; on the sandbox null means "no script".
 */
export function parseSimulate(
  environment: Environment,
  value: string | null | undefined,
): SimulateValue | null {
  if (value === undefined) return null;
  if (environment !== 'sandbox') {
    throw new ValidationError('sandbox_simulate: only accepted with a sandbox API key on /sandbox/api/.');
  }
  if (value === null) return null;
  if (!isSimulateValue(value)) {
    throw new ValidationError(`sandbox_simulate: must be one of ${SIMULATE_VALUES.join(', ')}.`);
  }
  return value;
}

/** Catalog items take the catalog's name and price; ad hoc items bring their own. */
export async function parseItems(
  db: Executor,
  organizationId: number,
  currency: string,
  items: CheckoutItemInput[],
): Promise<CheckoutItem[]> {
  const ids = items.flatMap((item) => (item.id === undefined ? [] : [item.id]));
  const catalog = await findSellableProducts(db, organizationId, ids, currency);
  return items.map((item, index) => {
    const field = `products[${index}]`;
    const quantity = item.quantity ?? 1;
    if (item.id !== undefined) {
      if (item.unit_price !== undefined) {
        throw new ValidationError(
          `${field}.unit_price: not allowed with a catalog id; the catalog price applies.`,
        );
      }
      const product = catalog.get(item.id);
      if (!product) throw new ValidationError(`products: unknown product id "${item.id}".`);
      return { productId: item.id, name: product.name, unitPrice: toBigInt(product.unit_price), quantity };
    }
    if (item.name === undefined && item.unit_price === undefined) {
      throw new ValidationError(`${field}: give a catalog id, or a name and a unit_price.`);
    }
    if (item.name === undefined) throw new ValidationError(`${field}.name: this field is required.`);
    if (item.unit_price === undefined)
      throw new ValidationError(`${field}.unit_price: this field is required.`);
    const name = requiredText(`${field}.name`, item.name);
    return { productId: null, name, unitPrice: parsePrice(`${field}.unit_price`, item.unit_price), quantity };
  });
}
