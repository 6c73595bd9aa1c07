import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isNonPublicAddress } from './ssrf.ts';

test('loopback, private, link-local and mapped addresses are non-public', () => {
  for (const address of [
    '127.0.0.1',
    '127.255.0.9',
    '10.1.2.3',
    '172.31.255.255',
    '192.168.0.1',
    '169.254.169.254',
    '100.100.100.100',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1%eth0',
    'fd12:3456::1',
    'fc00::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '[::1]',
    'not-an-address',
  ]) {
    assert.equal(isNonPublicAddress(address), true, address);
  }
});

test('public addresses pass', () => {
  for (const address of [
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
  ]) {
    assert.equal(isNonPublicAddress(address), false, address);
  }
});
