import ipaddr from 'ipaddr.js';

/**
 * The client's address of a request (issue 20, docs/deployment.md "Behind a proxy"): the socket's
 * peer, unless that peer is a trusted proxy (TRUST_PROXY, a list of CIDRs): then X-Forwarded-For is
 * read from its right end, each address a trusted proxy appended skipped, and the first one no
 * trusted proxy could have written is the client. An untrusted peer's X-Forwarded-For is ignored
 * (anyone can send one); a malformed entry stops the walk at the last address known good.
 */
export type TrustedProxies = [ipaddr.IPv4 | ipaddr.IPv6, number][];

/** Parses TRUST_PROXY (comma-separated CIDRs or single addresses); throws naming the bad entry. */
export function parseTrustedProxies(text: string): TrustedProxies {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      try {
        if (entry.includes('/')) return ipaddr.parseCIDR(entry);
        const ip = ipaddr.parse(entry);
        return [ip, ip.kind() === 'ipv4' ? 32 : 128] as [ipaddr.IPv4 | ipaddr.IPv6, number];
      } catch {
        throw new Error(`"${entry}" is not an address or a CIDR (e.g. 10.0.0.0/8, 127.0.0.1)`);
      }
    });
}

function parsed(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  try {
    const ip = ipaddr.parse(text.trim());
    return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
  } catch {
    return null;
  }
}

function isTrusted(ip: ipaddr.IPv4 | ipaddr.IPv6, trusted: TrustedProxies): boolean {
  return trusted.some(([range, bits]) => range.kind() === ip.kind() && ip.match(range, bits));
}

export function clientAddress(peer: string | undefined, forwardedFor: string | string[] | undefined, trusted: TrustedProxies): string {
  const socket = peer ?? 'unknown';
  if (!trusted.length || forwardedFor === undefined) return socket;
  let current = parsed(socket);
  if (!current || !isTrusted(current, trusted)) return socket;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = parsed(hops[i]!);
    if (!hop) break;
    current = hop;
    if (!isTrusted(hop, trusted)) break;
  }
  return current.toString();
}
