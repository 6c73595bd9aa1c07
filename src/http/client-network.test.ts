import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clientNetwork } from './client-network.ts';

test('an IPv4 address is its own network', () => {
  assert.equal(clientNetwork('192.0.2.1'), '192.0.2.1');
  assert.equal(clientNetwork('127.0.0.1'), '127.0.0.1');
});

test('an IPv6 address counts by its /64, however it is written', () => {
  const one = clientNetwork('2001:db8:1:2::1');
  assert.equal(one, '2001:db8:1:2::/64');
  for (const same of [
    '2001:db8:1:2:ffff:ffff:ffff:ffff',
    '2001:0db8:0001:0002:0000:0000:0000:0009',
    '2001:DB8:1:2:a:b:c:d',
    '2001:db8:1:2::abcd%eth0',
  ]) {
    assert.equal(clientNetwork(same), one, same);
  }
  assert.notEqual(clientNetwork('2001:db8:1:3::1'), one, 'the next /64 is another network');
  assert.equal(clientNetwork('::1'), '0:0:0:0::/64');
  assert.equal(clientNetwork('fe80::1'), 'fe80:0:0:0::/64');
  assert.equal(clientNetwork('2001:db8::'), '2001:db8:0:0::/64');
});

test('an IPv4-mapped IPv6 address counts as its IPv4 address', () => {
  assert.equal(clientNetwork('::ffff:192.0.2.1'), '192.0.2.1');
  assert.equal(clientNetwork('::ffff:c000:201'), '192.0.2.1');
  assert.equal(clientNetwork('0:0:0:0:0:ffff:10.1.2.3'), '10.1.2.3');
  // NAT64's prefix is not a mapped address: its /64 is one network (the translator's).
  assert.equal(clientNetwork('64:ff9b::192.0.2.1'), '64:ff9b:0:0::/64');
});

test('what is not an IP address is its own key', () => {
  assert.equal(clientNetwork('unknown'), 'unknown');
  assert.equal(clientNetwork(''), '');
});
