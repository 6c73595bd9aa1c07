// Drives checkouts through the HTTP API exactly as a merchant's server and the hosted page do.
import assert from 'node:assert/strict';
import { type ApiResponse, call, type TestServer } from './server.ts';

export type Json = Record<string, unknown>;

export const CARDS = {
  success: '4242 4242 4242 4242',
  declined: '4000 0000 0000 0002',
  insufficient: '4000 0000 0000 9995',
  expired: '4000 0000 0000 0069',
  error: '4000 0000 0000 0119',
  otherValid: '5555 5555 5555 4444',
  notLuhn: '4242 4242 4242 4241',
} as const;

export function billing(extra: Json = {}): Json {
  return {
    billing_country: 'FR',
    billing_first_name: 'Ada',
    billing_last_name: 'Lovelace',
    billing_email: 'ada@example.com',
    ...extra,
  };
}

export interface Created {
  checkout_id: string;
  order_id: string;
  checkout_url: string;
  token: string;
  expires_at: number;
}

export async function createCheckout(
  server: { url: string },
  apiKey: string,
  body: Json = {},
  base: '/api' | '/sandbox/api' = '/api',
): Promise<Created> {
  const response = await call<Created>(server, 'POST', `${base}/checkout/create/`, {
    apiKey,
    body: { products: [{ name: 'Widget', unit_price: 25, quantity: 2 }], ...billing(), ...body },
  });
  assert.equal(response.status, 201, response.text);
  return response.body;
}

export function card(number: string = CARDS.success): Json {
  return { card_number: number, exp_month: 12, exp_year: 2099, cvc: '123', cardholder_name: 'Ada Lovelace' };
}

export function pay(server: TestServer, token: string, number: string = CARDS.success): Promise<ApiResponse> {
  return call(server, 'POST', `/api/checkout/${token}/pay/`, { body: card(number) });
}

export function syncStatus(server: TestServer, token: string): Promise<ApiResponse> {
  return call(server, 'POST', '/api/checkout/sync-status/', { body: { token } });
}

/** The transaction.status_changed payloads written for one checkout, oldest first. */
export async function eventsOf(server: TestServer, orderId: string): Promise<Json[]> {
  const rows = await server.ctx.db
    .selectFrom('events')
    .select(['payload', 'subject'])
    .where('type', '=', 'transaction.status_changed')
    .orderBy('id')
    .execute();
  return rows.map((row) => JSON.parse(row.payload) as Json).filter((payload) => payload.order_id === orderId);
}

export async function paymentRow(server: TestServer, publicId: string) {
  return server.ctx.db
    .selectFrom('payments')
    .selectAll()
    .where('public_id', '=', publicId)
    .executeTakeFirstOrThrow();
}

export function attemptsOf(event: Json): Json[] {
  return event.depositAttempts as Json[];
}
