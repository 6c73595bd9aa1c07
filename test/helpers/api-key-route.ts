// The API-key endpoint the foundation's key-auth tests call: GET /transactions/{id}/ (scope payments:read),
// with a well-formed id that names no payment, so a key that passes authentication gets a 404.
import { call } from './server.ts';

export const KEY_ROUTE = '/transactions/TX0000000000000000/';
export const KEY_ROUTE_SCOPE = 'payments:read';
export const NEEDS_KEY_ROUTE = 'needs GET /transactions/{id}/ (the payments module), not registered yet';
export const NEEDS_CHECKOUT_ROUTE = 'needs POST /checkout/create/ (the checkout module), not registered yet';

/** Whether an API-key route is registered: without credentials it answers 401, where an unknown path is a 404. */
export async function requiresApiKey(
  server: { url: string },
  method: string,
  path: string,
): Promise<boolean> {
  return (await call(server, method, path)).status === 401;
}

export function keyRouteAvailable(server: { url: string }): Promise<boolean> {
  return requiresApiKey(server, 'GET', `/api${KEY_ROUTE}`);
}

export async function checkoutRouteAvailable(server: { url: string }): Promise<boolean> {
  return (await keyRouteAvailable(server)) && requiresApiKey(server, 'POST', '/api/checkout/create/');
}
