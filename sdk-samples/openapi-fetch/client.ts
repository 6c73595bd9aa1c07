// A merchant's server calling Kassa through openapi-fetch and the generated types (schema.d.ts): every
// path, body and answer below is checked by the compiler against the OpenAPI document.
// test/openapi-client.test.ts runs it against a real server.
import createClient from 'openapi-fetch';
import type { components, paths } from './schema.d.ts';

export type Payment = components['schemas']['Payment'];

/** `baseUrl` is the instance's URL, plus /sandbox for a sandbox key. */
export function kassaClient(baseUrl: string, apiKey: string) {
  return createClient<paths>({ baseUrl, headers: { Authorization: `Api-Key ${apiKey}` } });
}
export type KassaClient = ReturnType<typeof kassaClient>;

/** Creates a hosted checkout for one ad hoc product; the customer pays at checkout_url. */
export async function createCheckout(client: KassaClient, orderReference: string) {
  const { data, error } = await client.POST('/api/checkout/create/', {
    params: { header: { 'Idempotency-Key': `checkout-${orderReference}` } },
    body: {
      products: [{ name: 'Widget', unit_price: 25, quantity: 2 }],
      billing_country: 'FR',
      billing_first_name: 'Ada',
      billing_last_name: 'Lovelace',
      billing_email: 'ada@example.com',
      client_reference_id: orderReference,
    },
  });
  if (error) throw new Error(`checkout: ${error.detail}`);
  return data;
}

export async function getTransaction(client: KassaClient, id: string): Promise<Payment> {
  const { data, error } = await client.GET('/api/transactions/{id}/', { params: { path: { id } } });
  if (error) throw new Error(`transaction ${id}: ${error.detail}`);
  return data;
}

/** Every payment, following `next` page by page. */
export async function listTransactions(client: KassaClient): Promise<Payment[]> {
  const payments: Payment[] = [];
  for (let page = 1; ; page += 1) {
    const { data, error } = await client.GET('/api/transactions/', {
      params: { query: { page } },
    });
    if (error) throw new Error(`transactions: ${error.detail}`);
    payments.push(...data.results);
    if (data.next === null) return payments;
  }
}
