// The SSRF guard against IANA's registries, written out here independently of ssrf.ts: for every block
// its first and last address are refused and its neighbours outside are public (unless another block
// starts there). Sources: IANA IPv4 Special-Purpose Address Registry (blocks not globally reachable) and
// the IPv4 multicast space; IANA IPv6 Address Space (only 2000::/3 is global unicast) and the IPv6
// Special-Purpose Address Registry (non-global blocks inside 2000::/3).
import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { test } from 'node:test';
import {
  assertPublicHost,
  BlockedAddressError,
  guardedLookupWith,
  isNonPublicAddress,
  isOwnTestReceiver,
  type LookupAll,
  nonPublicReason,
} from './ssrf.ts';

/** [first, last] address of each refused IPv4 block. */
const IPV4_BLOCKS: [string, string][] = [
  ['0.0.0.0', '0.255.255.255'], // "this network"
  ['10.0.0.0', '10.255.255.255'], // private-use
  ['100.64.0.0', '100.127.255.255'], // shared address space
  ['127.0.0.0', '127.255.255.255'], // loopback
  ['169.254.0.0', '169.254.255.255'], // link-local
  ['172.16.0.0', '172.31.255.255'], // private-use
  ['192.0.0.0', '192.0.0.255'], // IETF protocol assignments
  ['192.0.2.0', '192.0.2.255'], // TEST-NET-1
  ['192.88.99.0', '192.88.99.255'], // deprecated 6to4 relay anycast
  ['192.168.0.0', '192.168.255.255'], // private-use
  ['198.18.0.0', '198.19.255.255'], // benchmarking
  ['198.51.100.0', '198.51.100.255'], // TEST-NET-2
  ['203.0.113.0', '203.0.113.255'], // TEST-NET-3
  ['224.0.0.0', '239.255.255.255'], // multicast
  ['240.0.0.0', '255.255.255.255'], // reserved, limited broadcast
];

/** Public addresses right next to those blocks. */
const IPV4_PUBLIC = [
  '1.0.0.0',
  '9.255.255.255',
  '11.0.0.0',
  '100.63.255.255',
  '100.128.0.0',
  '126.255.255.255',
  '128.0.0.0',
  '169.253.255.255',
  '169.255.0.0',
  '172.15.255.255',
  '172.32.0.0',
  '191.255.255.255',
  '192.0.1.0',
  '192.0.3.0',
  '192.31.196.1', // AS112, globally reachable
  '192.88.98.255',
  '192.88.100.0',
  '192.167.255.255',
  '192.169.0.0',
  '198.17.255.255',
  '198.20.0.0',
  '198.51.99.255',
  '198.51.101.0',
  '203.0.112.255',
  '203.0.114.0',
  '223.255.255.255',
  '93.184.215.14',
  '8.8.8.8',
];

/** [first, last] of refused IPv6 blocks: outside 2000::/3, and the non-global blocks inside it. */
const IPV6_BLOCKS: [string, string][] = [
  ['::', '1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], // below 2000::/3: ::, ::1, mapped, compatible, NAT64, 100::/64…
  ['4000::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], // above it: SRv6 5f00::/16, fc00::/7, fe80::/10, fec0::/10, ff00::/8
  ['2001::', '2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff'], // IETF protocol assignments, incl. Teredo 2001::/32
  ['2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff'], // documentation
  ['2002::', '2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff'], // 6to4
  ['3fff::', '3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff'], // documentation (RFC 9637)
];

const IPV6_PUBLIC = [
  '2000::',
  '2001:200::',
  '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff',
  '2001:db9::',
  '2001:4860:4860::8888',
  '2003::',
  '2620:4f:8000::1', // AS112, globally reachable
  '2606:4700:4700::1111',
  '3ffe:ffff::1',
  '3fff:1000::',
  '3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
];

test('every IPv4 special-purpose block that is not globally reachable is refused, first to last', () => {
  for (const [first, last] of IPV4_BLOCKS) {
    assert.equal(isNonPublicAddress(first), true, first);
    assert.equal(isNonPublicAddress(last), true, last);
  }
});

test('IPv4 addresses just outside those blocks are public', () => {
  for (const address of IPV4_PUBLIC) assert.equal(isNonPublicAddress(address), false, address);
});

test('IPv6 outside 2000::/3, and the non-global blocks inside it, are refused first to last', () => {
  for (const [first, last] of IPV6_BLOCKS) {
    assert.equal(isNonPublicAddress(first), true, first);
    assert.equal(isNonPublicAddress(last), true, last);
  }
});

test('transition forms are refused whatever IPv4 address they embed, public ones included', () => {
  for (const address of [
    '::ffff:8.8.8.8', // IPv4-mapped
    '::ffff:808:808',
    '::8.8.8.8', // IPv4-compatible
    '::808:808',
    '::7f00:1',
    '64:ff9b::8.8.8.8', // NAT64 well-known prefix
    '64:ff9b::a00:1',
    '64:ff9b:1::1', // local-use NAT64
    '2002:808:808::1', // 6to4
    '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
  ]) {
    assert.equal(isNonPublicAddress(address), true, address);
  }
});

test('IPv6 global unicast addresses outside the special blocks are public', () => {
  for (const address of IPV6_PUBLIC) assert.equal(isNonPublicAddress(address), false, address);
});

/** For each refused block, a word of its name in IANA's registry: the refusal says which it is. */
const BLOCK_NAMES: [string, RegExp][] = [
  ['0.1.2.3', /^0\.0\.0\.0\/8, "this network"/],
  ['10.0.0.1', /^10\.0\.0\.0\/8, private-use/],
  ['100.64.0.1', /^100\.64\.0\.0\/10, shared address space/],
  ['127.0.0.1', /^127\.0\.0\.0\/8, loopback/],
  ['169.254.169.254', /^169\.254\.0\.0\/16, link-local/],
  ['172.16.0.1', /^172\.16\.0\.0\/12, private-use/],
  ['192.0.0.8', /^192\.0\.0\.0\/24, IETF protocol assignments/],
  ['192.0.2.1', /^192\.0\.2\.0\/24, documentation, TEST-NET-1/],
  ['192.88.99.1', /^192\.88\.99\.0\/24, deprecated 6to4 relay anycast/],
  ['192.168.1.1', /^192\.168\.0\.0\/16, private-use/],
  ['198.18.0.1', /^198\.18\.0\.0\/15, benchmarking/],
  ['198.51.100.1', /^198\.51\.100\.0\/24, documentation, TEST-NET-2/],
  ['203.0.113.1', /^203\.0\.113\.0\/24, documentation, TEST-NET-3/],
  ['224.0.0.1', /^224\.0\.0\.0\/4, multicast/],
  ['255.255.255.255', /^240\.0\.0\.0\/4, reserved/],
  ['2001::1', /^2001::\/23, IETF protocol assignments, incl\. Teredo/],
  ['2001:db8::1', /^2001:db8::\/32, documentation/],
  ['2002::1', /^2002::\/16, 6to4/],
  ['3fff::1', /^3fff::\/20, documentation/],
];

test('each refusal names the registry block it falls in', () => {
  for (const [address, name] of BLOCK_NAMES) assert.match(nonPublicReason(address) ?? '', name, address);
});

test('brackets and zone ids are read through; anything that is not an address is refused', () => {
  // Only a host written whole in brackets is unbracketed.
  for (const text of ['::[1]', '[::1]]', '[::1', '::1]', 'x::1]', '[::1x', '[[::1]]']) {
    assert.equal(nonPublicReason(text), 'not an IP address', text);
  }
  assert.equal(isNonPublicAddress('[::1]'), true);
  assert.equal(isNonPublicAddress('[2606:4700:4700::1111]'), false);
  assert.equal(isNonPublicAddress('fe80::1%eth0'), true);
  assert.equal(isNonPublicAddress('2606:4700:4700::1111%eth0'), false);
  for (const text of ['not-an-address', '', '8.8.8', '2130706433', 'localhost']) {
    assert.equal(isNonPublicAddress(text), true, text);
  }
});

test('the refusal names the block it falls in', () => {
  assert.match(nonPublicReason('192.0.2.7') ?? '', /^192\.0\.2\.0\/24, documentation/);
  assert.match(nonPublicReason('10.1.2.3') ?? '', /^10\.0\.0\.0\/8, private-use/);
  assert.match(nonPublicReason('2001:db8::1') ?? '', /^2001:db8::\/32, documentation/);
  assert.match(nonPublicReason('2002::1') ?? '', /^2002::\/16, 6to4/);
  assert.equal(nonPublicReason('::1'), 'outside 2000::/3, global unicast (RFC 4291)');
  assert.equal(nonPublicReason('8.8.8.8'), null);
  assert.equal(nonPublicReason('2606:4700:4700::1111'), null);
  assert.equal(nonPublicReason('nope'), 'not an IP address');
});

const answers = (...addresses: string[]): LookupAddress[] =>
  addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

test('a host is refused if any of its answers is non-public, and names that answer', async () => {
  const resolve = (list: LookupAddress[]) => async () => list;
  await assertPublicHost('hooks.example', resolve(answers('93.184.215.14', '2606:4700:4700::1111')));
  for (const mixed of [answers('93.184.215.14', '10.0.0.7'), answers('10.0.0.7', '93.184.215.14')]) {
    await assert.rejects(assertPublicHost('hooks.example', resolve(mixed)), (error: unknown) => {
      assert.ok(error instanceof BlockedAddressError);
      assert.equal(
        error.message,
        'hooks.example resolves to 10.0.0.7, a non-public address (10.0.0.0/8, private-use (RFC 1918)).',
      );
      return true;
    });
  }
  await assert.rejects(
    assertPublicHost('empty.example', resolve([])),
    (error: unknown) =>
      error instanceof BlockedAddressError && error.message === 'empty.example has no address.',
  );
  const dnsError = Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
  await assert.rejects(
    assertPublicHost('missing.example', async () => {
      throw dnsError;
    }),
    (error) => error === dnsError,
  );
});

test('an IP-literal host is judged without resolving, brackets and all', async () => {
  const never = async (): Promise<LookupAddress[]> => {
    throw new Error('an IP literal was resolved');
  };
  await assertPublicHost('93.184.215.14', never);
  await assertPublicHost('[2606:4700:4700::1111]', never);
  await assert.rejects(assertPublicHost('[::1]', never), (error: unknown) => {
    assert.ok(error instanceof BlockedAddressError);
    assert.match(error.message, /^\[::1\] is a non-public address/);
    return true;
  });
  await assert.rejects(assertPublicHost('127.0.0.1', never), (error: unknown) => {
    assert.ok(error instanceof BlockedAddressError);
    assert.match(error.message, /^127\.0\.0\.1 is a non-public address \(127\.0\.0\.0\/8, loopback/);
    return true;
  });
});

function lookupOf(result: LookupAddress[] | Error): LookupAll {
  return (_hostname, options, callback) => {
    assert.equal(options.all, true, 'the guard asks for every answer');
    if (result instanceof Error) callback(result, []);
    else callback(null, result);
  };
}

function runLookup(lookup: LookupAll, all: boolean) {
  return new Promise<{ error: Error | null; address: unknown; family?: number }>((resolve) =>
    guardedLookupWith(lookup)('hooks.example', { all, family: 0 }, (error, address, family) =>
      resolve({ error, address, family }),
    ),
  );
}

test('at connect time only the public answers are used; none public is a refusal', async () => {
  const mixed = lookupOf(answers('10.0.0.7', '93.184.215.14', '2606:4700:4700::1111'));
  assert.deepEqual(await runLookup(mixed, false), { error: null, address: '93.184.215.14', family: 4 });
  const every = await runLookup(mixed, true);
  assert.equal(every.error, null);
  assert.deepEqual(every.address, answers('93.184.215.14', '2606:4700:4700::1111'));
  const refused = await runLookup(lookupOf(answers('169.254.169.254')), false);
  assert.ok(refused.error instanceof BlockedAddressError);
  assert.match(
    refused.error.message,
    /^hooks\.example resolves to 169\.254\.169\.254, a non-public address \(169\.254\.0\.0\/16, link-local/,
  );
  const nothing = await runLookup(lookupOf([]), false);
  assert.ok(nothing.error instanceof BlockedAddressError);
  assert.equal(nothing.error.message, 'hooks.example has no address.');
  const failure = new Error('ENOTFOUND');
  assert.equal((await runLookup(lookupOf(failure), false)).error, failure);
});

test("the service's own test receiver is recognised by origin and path only", () => {
  const base = 'https://pay.example.com';
  assert.equal(isOwnTestReceiver('https://pay.example.com/api/v1/webhooks/acme/', base), true);
  assert.equal(isOwnTestReceiver('https://pay.example.com/api/v1/webhooks/acme', base), true);
  for (const url of [
    'https://pay.example.com/api/v1/webhooks/acme/extra/',
    'https://pay.example.com/api/v1/webhooks/',
    'https://pay.example.com/api/organization/',
    'https://pay.example.com:8443/api/v1/webhooks/acme/',
    'http://pay.example.com/api/v1/webhooks/acme/',
    'https://evil.example/api/v1/webhooks/acme/',
    'https://pay.example.com/api/v1/webhooks/acme/?x=1',
    'https://user:pw@pay.example.com/api/v1/webhooks/acme/',
    'https://user@pay.example.com/api/v1/webhooks/acme/',
    'https://:pw@pay.example.com/api/v1/webhooks/acme/',
    'https://pay.example.com/x/api/v1/webhooks/acme/',
    'not a url',
  ]) {
    assert.equal(isOwnTestReceiver(url, base), false, url);
  }
  assert.equal(isOwnTestReceiver('https://pay.example.com/api/v1/webhooks/acme/', 'not a url'), false);
});

test('the system resolver is used by default: localhost is refused by the addresses it resolves to', async () => {
  await assert.rejects(assertPublicHost('localhost'), (error: unknown) => {
    assert.ok(error instanceof BlockedAddressError);
    assert.match(error.message, /^localhost resolves to (127\.0\.0\.1|::1), a non-public address/);
    return true;
  });
});
