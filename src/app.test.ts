import assert from 'node:assert/strict';
import { test } from 'node:test';
import { redactUrl } from './app.ts';

test('the request log hides a checkout token and nothing else of the path', () => {
  const token = 'ck_4f9KQ2mZ8rT1aBcDeFgHiJ';
  for (const [url, logged] of [
    [`/checkout/${token}`, '/checkout/[redacted]'],
    [`/checkout/${token}?lang=fr`, '/checkout/[redacted]?lang=fr'],
    [`/api/checkout/${token}/`, '/api/checkout/[redacted]/'],
    [`/api/checkout/${token}/pay/`, '/api/checkout/[redacted]/pay/'],
    [`/api/checkout/${token}/cancel`, '/api/checkout/[redacted]/cancel'],
    // The router ignores repeated slashes, so the token must not slip past behind a second one.
    [`/api/checkout//${token}/pay/`, '/api/checkout/[redacted]/pay/'],
    // A token that merely starts like a route name is still a token.
    ['/api/checkout/createAbc123/', '/api/checkout/[redacted]/'],
    ['/api/checkout/sync-status-x/', '/api/checkout/[redacted]/'],
  ]) {
    assert.equal(redactUrl(url), logged, url);
  }
  for (const url of [
    '/api/checkout/create/',
    '/api/checkout/create',
    '/sandbox/api/checkout/create/',
    '/sandbox/api/checkout/create/?x=1',
    '/api/checkout/sync-status/',
    '/sandbox/api/checkout/sync-status',
    '/api/transactions/TX4f9KQ2mZ8rT1aBcD/',
  ]) {
    assert.equal(redactUrl(url), url, url);
  }
});
