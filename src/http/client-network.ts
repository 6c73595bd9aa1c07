// The network a client address counts for in per-address limits. An IPv4 address is one client; an IPv6
// address is counted by its /64, the prefix one subscriber line or host is given (RFC 6177, and what
// hosting providers assign to one machine), so that the 2^64 addresses of one line cannot each start a
// fresh count. An IPv4-mapped IPv6 address (::ffff:192.0.2.1, what a dual-stack socket reports) counts
// as its IPv4 address. Only limits use this: logs and the audit keep the full address.
import { isIPv4, isIPv6 } from 'node:net';

/** The eight 16-bit groups of an IPv6 address (a zone, %eth0, is dropped), or null if it is none. */
function groupsOf(address: string): number[] | null {
  const bare = address.split('%')[0] ?? '';
  if (!isIPv6(bare)) return null;
  let text = bare;
  // A trailing dotted quad (::ffff:192.0.2.1, 64:ff9b::192.0.2.1) as two groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const [a, b, c, d] = quad.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const parse = (part: string | undefined) =>
    part ? part.split(':').map((group) => Number.parseInt(group, 16)) : [];
  const left = parse(head);
  const right = parse(tail ?? undefined);
  const groups =
    tail === null ? left : [...left, ...new Array(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 ? groups : null;
}

/** The key a per-address limit counts `address` under (the address itself when it is not an IP). */
export function clientNetwork(address: string): string {
  if (isIPv4(address)) return address;
  const groups = groupsOf(address);
  if (groups === null) return address;
  const mapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
  if (mapped) {
    const [high, low] = [groups[6] ?? 0, groups[7] ?? 0];
    return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  }
  return `${groups
    .slice(0, 4)
    .map((group) => group.toString(16))
    .join(':')}::/64`;
}
