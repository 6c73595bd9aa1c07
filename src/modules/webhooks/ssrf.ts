// The SSRF guard, on in every environment unless KASSA_WEBHOOK_ALLOW_PRIVATE=true: endpoint hosts that
// resolve to a non-public address are refused when the URL is configured and again at every delivery,
// where the check runs on the address actually connected to (a DNS answer can change in between).
// The service's own public test receiver is the one exception (isOwnTestReceiver).
//
// The ranges come from IANA's registries, not from memory:
// - IPv4: the IANA IPv4 Special-Purpose Address Registry
//   (https://www.iana.org/assignments/iana-ipv4-special-registry/), every block whose "Globally
//   Reachable" is False or N/A, plus 224.0.0.0/4 (multicast, from the IANA IPv4 Address Space Registry).
// - IPv6: the IANA IPv6 Address Space registry
//   (https://www.iana.org/assignments/ipv6-address-space/) allocates only 2000::/3 as Global Unicast;
//   everything else is reserved, unique-local, link-local or multicast (this also refuses ::1, ::,
//   IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96, NAT64 64:ff9b::/96 and 64:ff9b:1::/48, discard
//   100::/64 and SRv6 5f00::/16). Inside 2000::/3, the IANA IPv6 Special-Purpose Address Registry
//   (https://www.iana.org/assignments/iana-ipv6-special-registry/) blocks that are not globally
//   reachable are refused too.
// Fail closed: a block marked not reachable is refused whole, even where a smaller entry inside it is
// marked reachable (the anycast /32s in 192.0.0.0/24 and 2001::/23): no webhook endpoint lives there.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

type Range = readonly [network: string, prefix: number, name: string];

/** IANA IPv4 Special-Purpose Address Registry, Globally Reachable False or N/A; and multicast. */
export const IPV4_NON_PUBLIC: readonly Range[] = [
  ['0.0.0.0', 8, '"this network" (RFC 791)'],
  ['10.0.0.0', 8, 'private-use (RFC 1918)'],
  ['100.64.0.0', 10, 'shared address space (RFC 6598)'],
  ['127.0.0.0', 8, 'loopback (RFC 1122)'],
  ['169.254.0.0', 16, 'link-local (RFC 3927)'],
  ['172.16.0.0', 12, 'private-use (RFC 1918)'],
  ['192.0.0.0', 24, 'IETF protocol assignments (RFC 6890)'],
  ['192.0.2.0', 24, 'documentation, TEST-NET-1 (RFC 5737)'],
  ['192.88.99.0', 24, 'deprecated 6to4 relay anycast (RFC 7526)'],
  ['192.168.0.0', 16, 'private-use (RFC 1918)'],
  ['198.18.0.0', 15, 'benchmarking (RFC 2544)'],
  ['198.51.100.0', 24, 'documentation, TEST-NET-2 (RFC 5737)'],
  ['203.0.113.0', 24, 'documentation, TEST-NET-3 (RFC 5737)'],
  ['224.0.0.0', 4, 'multicast (RFC 5771)'],
  ['240.0.0.0', 4, 'reserved, and limited broadcast (RFC 1112, RFC 919)'],
];

/** IANA IPv6 Address Space: the only block allocated as Global Unicast. */
export const IPV6_GLOBAL_UNICAST: Range = ['2000::', 3, 'global unicast (RFC 4291)'];

/** IANA IPv6 Special-Purpose Address Registry inside 2000::/3, Globally Reachable False or N/A. */
export const IPV6_NON_PUBLIC: readonly Range[] = [
  ['2001::', 23, 'IETF protocol assignments, incl. Teredo 2001::/32 (RFC 2928, RFC 4380)'],
  ['2001:db8::', 32, 'documentation (RFC 3849)'],
  ['2002::', 16, '6to4 (RFC 3056)'],
  ['3fff::', 20, 'documentation (RFC 9637)'],
];

function blockListOf(range: Range, family: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  list.addSubnet(range[0], range[1], family);
  return list;
}

const ipv4Checks = IPV4_NON_PUBLIC.map((range) => ({ range, list: blockListOf(range, 'ipv4') }));
const ipv6Checks = IPV6_NON_PUBLIC.map((range) => ({ range, list: blockListOf(range, 'ipv6') }));
const globalUnicast = blockListOf(IPV6_GLOBAL_UNICAST, 'ipv6');

/** An IPv6 host as URLs write it, [2001:db8::1], without its brackets; anything else as it is. */
function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** Why an IP address (v4 or v6 literal) must never receive a webhook, or null when it is public. */
export function nonPublicReason(address: string): string | null {
  const bare = unbracket(address).replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) {
    const hit = ipv4Checks.find((check) => check.list.check(bare, 'ipv4'));
    return hit ? `${hit.range[0]}/${hit.range[1]}, ${hit.range[2]}` : null;
  }
  if (family === 6) {
    if (!globalUnicast.check(bare, 'ipv6')) {
      const [network, prefix, name] = IPV6_GLOBAL_UNICAST;
      return `outside ${network}/${prefix}, ${name}`;
    }
    const hit = ipv6Checks.find((check) => check.list.check(bare, 'ipv6'));
    return hit ? `${hit.range[0]}/${hit.range[1]}, ${hit.range[2]}` : null;
  }
  return 'not an IP address'; // refuse rather than guess
}

export function isNonPublicAddress(address: string): boolean {
  return nonPublicReason(address) !== null;
}

export class BlockedAddressError extends Error {}

function refusal(hostname: string, address: string, reason: string): BlockedAddressError {
  return new BlockedAddressError(
    unbracket(hostname) === address
      ? `${hostname} is a non-public address (${reason}).`
      : `${hostname} resolves to ${address}, a non-public address (${reason}).`,
  );
}

/** Refuses an IP literal that is not public (nothing to resolve). */
export function assertPublicAddress(address: string): void {
  const reason = nonPublicReason(address);
  if (reason !== null) throw refusal(address, unbracket(address), reason);
}

export type Resolver = (hostname: string) => Promise<LookupAddress[]>;

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
  );

/**
 * Resolves a URL's host and refuses it when any answer is non-public (a host resolving to one public
 * and one private address could be connected to either). Throws BlockedAddressError or the DNS error.
 */
export async function assertPublicHost(hostname: string, resolve: Resolver = systemResolver): Promise<void> {
  const host = unbracket(hostname);
  if (isIP(host)) return assertPublicAddress(hostname);
  const answers = await resolve(host);
  if (answers.length === 0) throw new BlockedAddressError(`${hostname} has no address.`);
  for (const answer of answers) {
    const reason = nonPublicReason(answer.address);
    if (reason !== null) throw refusal(hostname, answer.address, reason);
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** dns.lookup asked for every answer (what guardedLookup filters). */
export type LookupAll = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** A `lookup` for http(s).Agent that connects only to the public addresses among `lookup`'s answers. */
export function guardedLookupWith(lookup: LookupAll) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const allowed = addresses.filter((answer) => !isNonPublicAddress(answer.address));
      if (allowed.length === 0) {
        const first = addresses[0];
        if (!first) return callback(new BlockedAddressError(`${hostname} has no address.`), []);
        return callback(refusal(hostname, first.address, nonPublicReason(first.address) ?? ''), []);
      }
      if (options.all) return callback(null, allowed);
      callback(null, allowed[0].address, allowed[0].family);
    });
  };
}

export const guardedLookup = guardedLookupWith(dnsLookup as LookupAll);

const RECEIVER_PATH = /^\/api\/v1\/webhooks\/[^/]+\/?$/;

/** Whether `url` is this service's own public test receiver, which the guard always allows. */
export function isOwnTestReceiver(url: string, publicUrl: string): boolean {
  try {
    const target = new URL(url);
    return (
      target.origin === new URL(publicUrl).origin &&
      RECEIVER_PATH.test(target.pathname) &&
      target.search === '' &&
      target.username === '' &&
      target.password === ''
    );
  } catch {
    return false;
  }
}
