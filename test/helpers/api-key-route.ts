// The API-key endpoint the foundation's key-auth tests call: GET /transactions/{id}/ (scope payments:read),
// with a well-formed id that names no payment, so a key that passes authentication gets a 404.
export const KEY_ROUTE = '/transactions/TX0000000000000000/';
export const KEY_ROUTE_SCOPE = 'payments:read';
