import { decodeJwt } from 'jose';
import type { Deps } from '../context';
import { API_KEYS_CHANNEL, authenticate, type Authentication } from './authenticate';
import type { Principal } from './principal';

/**
 * Close codes of graphql-ws sockets (docs/graphql.md), besides graphql-ws's own (4400 bad
 * message, 4408 no connection_init in time, 4500 internal error, …).
 */
export const socketCloseCodes = {
  /** No valid credential in connectionParams, or the credential expired or was revoked since. */
  unauthorized: 4401,
  /** The credential still authenticates, but with other permissions (a member's role changed): reconnect. */
  principalChanged: 4403,
  /** The server is shutting down (1001, "Going away"; graphql-ws's dispose). */
  goingAway: 1001,
} as const;

export interface SocketSession {
  /** The authentication of the socket, as of its last check. */
  current(): Authentication & { principal: Principal };
  /** Stops the checks (the socket closed). */
  stop(): void;
}

/**
 * The open sockets of this process by subject ("member:<id>", "accountHolder:<id>", "apiKey:<id>"),
 * so a revocation is honoured at once instead of at the next interval: a member removed or given
 * another role, a session logged out, a password reset (recheckSockets, by the process that made the
 * change), and any change of an API key or its application (every process: the API key cache's
 * invalidation, API_KEYS_CHANNEL, re-checks every API key socket).
 */
const bySubject = new WeakMap<Deps, Map<string, Set<() => Promise<void>>>>();
/** The processes (Deps) whose API key sockets follow API_KEYS_CHANNEL. */
const watchingKeys = new WeakSet<Deps>();

function subjectOf(p: Principal): string | null {
  switch (p.type) {
    case 'member':
      return `member:${p.memberId}`;
    case 'accountHolder':
      return `accountHolder:${p.accountHolderId}`;
    case 'apiKey':
      return `apiKey:${p.apiKeyId}`;
    case 'operator':
      return null;
  }
}

/** Checks the credential of this process's open sockets of the subject now (after the change committed). */
export function recheckSockets(deps: Deps, type: 'member' | 'accountHolder', id: string): void {
  for (const check of bySubject.get(deps)?.get(`${type}:${id}`) ?? []) void check();
}

/**
 * Every API key socket of the process checks its key again when any key or application changed
 * (the notification carries no key: each socket's check is one look-up, the cache being empty).
 */
function watchApiKeyChanges(deps: Deps): void {
  if (watchingKeys.has(deps)) return;
  watchingKeys.add(deps);
  const all = () => {
    for (const [subject, checks] of bySubject.get(deps) ?? []) if (subject.startsWith('apiKey:')) for (const check of checks) void check();
  };
  deps.deliveryStatus.watch(API_KEYS_CHANNEL, { notified: all, reset: all });
}

/** connectionParams as request headers: the same names as HTTP (authorization, x-api-key, x-operator-key). */
function headersOf(params: Readonly<Record<string, unknown>> | undefined): Headers {
  const headers = new Headers();
  for (const [k, v] of Object.entries(params ?? {})) if (typeof v === 'string') headers.set(k, v);
  return headers;
}

/** Who the principal is and what it may do: a check that finds another answer closes the socket. */
function identityOf(p: Principal): string {
  switch (p.type) {
    case 'member':
      return `member:${p.memberId}:${p.organizationId}:${p.role}`;
    case 'apiKey':
      return `apiKey:${p.apiKeyId}:${p.environmentId}:${p.mode}`;
    case 'accountHolder':
      return `accountHolder:${p.accountHolderId}`;
    case 'operator':
      return `operator:${p.operatorId}`;
  }
}

/** The access token's expiry (ms), if the credential is one (already verified by authenticate). */
function tokenExpiry(headers: Headers): number | null {
  const m = /^Bearer\s+(\S+)$/i.exec(headers.get('authorization')?.trim() ?? '');
  if (!m) return null;
  try {
    const { exp } = decodeJwt(m[1]!);
    return typeof exp === 'number' ? exp * 1000 : null;
  } catch {
    return null;
  }
}

/** A close reason is at most 123 bytes (RFC 6455); ours are short sentences without credentials. */
const reasonOf = (a: Authentication) =>
  Buffer.from(a.credentialError?.message ?? 'Send a credential in connectionParams: authorization, x-api-key or x-operator-key.')
    .subarray(0, 123)
    .toString();

/**
 * The credential of one graphql-ws socket. It is authenticated at connection_init, by the same
 * authenticate() as an HTTP request, and a socket without a valid one is closed with 4401 before
 * any acknowledgement. While the socket is open the credential is authenticated again every
 * WS_REAUTH_INTERVAL_MS, and when its access token expires: a credential that no longer
 * authenticates (token expired, API key revoked or expired, application suspended, operator key
 * revoked, password reset or changed, member gone, and any future revocation authenticate()
 * learns) closes the socket with 4401, a principal whose permissions changed with 4403. Its
 * subscriptions end with it.
 *
 * Returns null when the connection is refused (close already called).
 */
export async function openSocketSession(
  deps: Deps,
  connectionParams: Readonly<Record<string, unknown>> | undefined,
  close: (code: number, reason: string) => void,
): Promise<SocketSession | null> {
  const headers = headersOf(connectionParams);
  const first = await authenticate(headers, deps);
  if (!first.principal) {
    close(socketCloseCodes.unauthorized, reasonOf(first));
    return null;
  }
  const identity = identityOf(first.principal);
  let auth = first as Authentication & { principal: Principal };
  let stopped = false;
  const timers: NodeJS.Timeout[] = [];
  const subject = subjectOf(first.principal);
  let registry = bySubject.get(deps);
  if (!registry) bySubject.set(deps, (registry = new Map()));
  const stop = () => {
    stopped = true;
    for (const t of timers) clearTimeout(t);
    const set = subject ? registry.get(subject) : undefined;
    set?.delete(check);
    if (set?.size === 0) registry.delete(subject!);
  };
  const end = (code: number, reason: string) => {
    stop();
    close(code, reason);
  };
  const check = async () => {
    if (stopped) return;
    let next: Authentication;
    try {
      next = await authenticate(headers, deps);
    } catch (err) {
      deps.log.warn({ err }, 'graphql-ws credential check failed; the next one decides');
      return;
    }
    if (stopped) return;
    if (!next.principal) return end(socketCloseCodes.unauthorized, reasonOf(next));
    if (identityOf(next.principal) !== identity) return end(socketCloseCodes.principalChanged, 'The credential now has other permissions: reconnect.');
    auth = next as typeof auth;
  };
  if (subject) {
    let set = registry.get(subject);
    if (!set) registry.set(subject, (set = new Set()));
    set.add(check);
    if (first.principal.type === 'apiKey') watchApiKeyChanges(deps);
  }
  const every = setInterval(() => void check(), deps.config.WS_REAUTH_INTERVAL_MS);
  every.unref();
  timers.push(every);
  const exp = tokenExpiry(headers);
  if (exp !== null) {
    // at the expiry (by the service's clock), plus a second for the token's second precision
    const atExpiry = setTimeout(() => void check(), Math.min(Math.max(exp - deps.clock.now().getTime(), 0) + 1000, 2 ** 31 - 1));
    atExpiry.unref();
    timers.push(atExpiry);
  }
  return { current: () => auth, stop };
}
