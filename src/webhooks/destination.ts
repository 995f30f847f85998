import { isIP } from 'node:net';
import { lookup } from 'node:dns/promises';
import type { LookupAddress } from 'node:dns';
import ipaddr from 'ipaddr.js';

/**
 * SSRF guard for webhook destinations. A subscriber controls the URL, so without this guard a
 * delivery could be aimed at our own network (cloud metadata, databases, admin ports). Two layers:
 * `checkUrlSyntax` at registration (cheap, no I/O), and `resolveCheckedHost` on every new connection
 * (sender.ts wires it in as the socket's `lookup`), so the address connected to is the one checked
 * and DNS rebinding between a check and the connect has nothing to exploit.
 */

export interface DestinationPolicy {
  /** true in production: only https URLs. */
  requireHttps: boolean;
  /** CIDRs (e.g. '127.0.0.1/32', '::1/128') that are allowed even though non-public. Empty in production. */
  allowlist: string[];
}
/** addressRefused: the host is a non-public or localhost address (not a malformed URL), which WEBHOOK_DESTINATION_ALLOWLIST can open outside production. */
export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string; addressRefused?: true };

/** Error code of a refusal raised by `resolveCheckedHost` (and thus by a guarded socket lookup). */
export const BLOCKED_CODE = 'EBLOCKED';
/** getaddrinfo failures: the name does not resolve (now). */
export const DNS_ERROR_CODES: ReadonlySet<string> = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ENODATA', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA']);

const MAX_URL_LENGTH = 2048;
// ipaddr.js calls every IPv6 address outside its special list 'unicast', including leftovers of
// ::/8 such as the deprecated IPv4-compatible ::a.b.c.d; only 2000::/3 is allocated global unicast.
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

type IP = ipaddr.IPv4 | ipaddr.IPv6;

function parseIp(text: string): IP | null {
  try {
    return ipaddr.parse(text);
  } catch {
    return null;
  }
}

/** IPv4-mapped IPv6 (::ffff:a.b.c.d) is the IPv4 address on a dual-stack socket: judge it as such. */
function unmap(ip: IP): IP {
  return ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
}

/**
 * Whether one IP address (v4 or v6 text) is a public unicast address; exported for tests.
 * Everything ipaddr.js puts in a special range is refused, including the IPv6 forms that embed an
 * IPv4 address (mapped, NAT64, 6to4, Teredo): rather than trusting the embedded address we refuse.
 */
export function isPublicAddress(address: string): boolean {
  const ip = parseIp(address);
  if (!ip || ip.range() !== 'unicast') return false;
  return ip.kind() === 'ipv4' || ip.match(GLOBAL_UNICAST_V6);
}

/** Whether the address falls in one of the allowlist CIDRs. Malformed entries match nothing (fail closed). */
export function isAllowlisted(address: string, allowlist: string[]): boolean {
  const parsed = parseIp(address);
  if (!parsed) return false;
  const ip = unmap(parsed);
  return allowlist.some((cidr) => {
    let range: [IP, number];
    try {
      range = ipaddr.parseCIDR(cidr);
    } catch {
      return false;
    }
    // '::ffff:127.0.0.1/128' means 127.0.0.1/32: same normalization as the address.
    const [net, bits] = range;
    if (net.kind() === 'ipv6' && (net as ipaddr.IPv6).isIPv4MappedAddress() && bits >= 96) range = [(net as ipaddr.IPv6).toIPv4Address(), bits - 96];
    return range[0].kind() === ip.kind() && ip.match(range);
  });
}

/** URL hostname without IPv6 brackets and trailing dots ('localhost.' is localhost). */
function bareHost(hostname: string): string {
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname.replace(/\.+$/, '');
}

function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

/** Why `address` (resolved from, or literal in, `host`) may not be connected to; null when it may. */
function refusal(host: string, address: string, policy: DestinationPolicy): string | null {
  if (isAllowlisted(address, policy.allowlist)) return null;
  // localhost names are refused whatever they resolve to: only an explicit allowlist entry opens them.
  if (isLocalhostName(host)) return `${host} resolves to ${address}, which is not allowlisted`;
  if (isPublicAddress(address)) return null;
  return isIP(host) ? `${address} is not a public address` : `${host} resolves to non-public address ${address}`;
}

function blocked(reason: string): Error & { code: string } {
  return Object.assign(new Error(reason), { code: BLOCKED_CODE });
}

/** Syntax-level check at registration: absolute http(s) URL, https when required, no userinfo (user:pass@), no fragment, length <= 2048, a host. IP-literal hosts are checked against the address rules right away. */
export function checkUrlSyntax(raw: string, policy: DestinationPolicy): UrlCheck {
  if (typeof raw !== 'string' || raw.length === 0) return { ok: false, reason: 'URL is empty' };
  if (raw.length > MAX_URL_LENGTH) return { ok: false, reason: `URL is longer than ${MAX_URL_LENGTH} characters` };
  // The URL parser silently strips whitespace and control characters; refuse them so what is stored is what was typed.
  if (/[\u0000-\u0020\u007f]/.test(raw)) return { ok: false, reason: 'URL contains whitespace or control characters' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'not an absolute URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: 'URL scheme must be http or https' };
  if (policy.requireHttps && url.protocol !== 'https:') return { ok: false, reason: 'URL must use https' };
  if (url.username !== '' || url.password !== '') return { ok: false, reason: 'URL must not contain credentials' };
  // url.hash is '' for a bare trailing '#'; '#' can only start a fragment, so look at the text.
  if (raw.includes('#')) return { ok: false, reason: 'URL must not contain a fragment' };
  const host = bareHost(url.hostname);
  if (host === '') return { ok: false, reason: 'URL has no host' };
  if (isIP(host)) {
    const why = refusal(host, host, policy);
    if (why) return { ok: false, reason: why, addressRefused: true };
  } else if (isLocalhostName(host) && policy.allowlist.length === 0) {
    return { ok: false, reason: `${host} is not an allowed destination`, addressRefused: true };
  }
  return { ok: true, url };
}

/**
 * Resolves `hostname` (all A/AAAA records) and returns them when every one may be connected to;
 * otherwise rejects with an error whose code is BLOCKED_CODE (a refused address) or the resolver's
 * code (ENOTFOUND, EAI_AGAIN...). Refusing when ANY record is bad, not just picking a good one,
 * keeps a name that mixes public and internal records from being used at all.
 */
export async function resolveCheckedHost(hostname: string, policy: DestinationPolicy): Promise<LookupAddress[]> {
  const host = bareHost(hostname.toLowerCase());
  const addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host, { all: true });
  if (addresses.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENODATA' });
  for (const { address } of addresses) {
    const why = refusal(host, address, policy);
    if (why) throw blocked(why);
  }
  return addresses;
}

/** Resolves the host (all A/AAAA records through dns.lookup with {all:true}) and refuses when ANY resolved address is not public (unless inside the allowlist). */
export async function checkDestination(
  raw: string,
  policy: DestinationPolicy,
): Promise<{ ok: true; addresses: string[] } | { ok: false; outcome: 'BLOCKED_DESTINATION' | 'DNS_ERROR'; reason: string; addressRefused?: true }> {
  const syntax = checkUrlSyntax(raw, policy);
  if (!syntax.ok)
    return { ok: false, outcome: 'BLOCKED_DESTINATION', reason: syntax.reason, ...(syntax.addressRefused ? { addressRefused: true as const } : {}) };
  try {
    const addresses = await resolveCheckedHost(syntax.url.hostname, policy);
    return { ok: true, addresses: addresses.map((a) => a.address) };
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === BLOCKED_CODE) return { ok: false, outcome: 'BLOCKED_DESTINATION', reason: (err as Error).message, addressRefused: true };
    return { ok: false, outcome: 'DNS_ERROR', reason: `${syntax.url.hostname} does not resolve (${typeof code === 'string' ? code : 'lookup failed'})` };
  }
}
