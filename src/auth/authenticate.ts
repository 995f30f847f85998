import { DomainError } from '../errors';
import type { Deps } from '../context';
import { rolePermissions } from './permissions';
import type { Principal } from './principal';
import { apiKeyPattern, operatorKeyPattern, sha256 } from './secrets';
import { verifyAccessToken } from './tokens';
import { Prisma, type Db } from '../db/prisma';
import type { MemberRole } from '../generated/prisma/enums';

export interface Authentication {
  principal: Principal | null;
  /** Set when a credential was presented and refused; routes that need one answer with it. */
  credentialError: DomainError | null;
}

const none: Authentication = { principal: null, credentialError: null };
const invalid = (detail: string): Authentication => ({ principal: null, credentialError: new DomainError('INVALID_CREDENTIAL', detail) });

/**
 * Reads the one credential of a request: `X-Api-Key` (application), `Authorization: Bearer`
 * (member or account-holder access token, told apart by audience) or `X-Operator-Key`
 * (platform operator). A request that carries more than one is refused: principals never mix.
 */
export async function authenticate(headers: Headers, deps: Deps): Promise<Authentication> {
  const apiKey = headers.get('x-api-key');
  const authorization = headers.get('authorization');
  const operatorKey = headers.get('x-operator-key');
  const presented = [apiKey, authorization, operatorKey].filter((v) => v !== null).length;
  if (presented === 0) return none;
  if (presented > 1)
    return {
      principal: null,
      credentialError: new DomainError('MULTIPLE_CREDENTIALS', 'Send exactly one credential: X-Api-Key, Authorization or X-Operator-Key.'),
    };
  if (apiKey !== null) return authenticateApiKey(apiKey.trim(), deps);
  if (operatorKey !== null) return authenticateOperator(operatorKey.trim(), deps);
  const match = /^Bearer\s+(\S+)$/i.exec(authorization!.trim());
  if (!match) return invalid('The Authorization header must be "Bearer <access token>".');
  return authenticateBearer(match[1]!, deps);
}

/**
 * Verified API keys, kept per process so the hot path skips the key lookup, and correct under
 * revocation on every process (issue 22): every change that can refuse a key (revocation,
 * rotation, an application's status) notifies API_KEYS_CHANNEL in its own transaction
 * (notifyApiKeysChanged), which PostgreSQL delivers to every process's LISTEN connection at the
 * commit; each process then empties its cache. The cache is used only while that connection is up
 * with its LISTEN in place (deps.deliveryStatus.isListening): without it (starting, connection
 * lost), every request looks its key up. A look-up that started before an invalidation is not
 * kept (the generation). CACHE_TTL_MS bounds an entry's life anyway. The process that makes the
 * change also empties its cache after its commit (invalidateApiKeyCache).
 */
export const API_KEYS_CHANNEL = 'api_keys_changed';
const CACHE_TTL_MS = 60_000;
const CACHE_MAX = 10_000;
type KeyRow = NonNullable<Awaited<ReturnType<typeof lookupApiKey>>>;
interface KeyCache {
  entries: Map<string, { row: KeyRow | null; until: number }>;
  generation: number;
  /** When the listener was last asked to (re)connect, for a retry at most once a second. */
  askedAt: number;
}
const apiKeyCache = new WeakMap<Deps, KeyCache>();

function cacheOf(deps: Deps): KeyCache {
  let cache = apiKeyCache.get(deps);
  if (!cache) {
    const c: KeyCache = (cache = { entries: new Map(), generation: 0, askedAt: 0 });
    apiKeyCache.set(deps, c);
    const clear = () => {
      c.entries.clear();
      c.generation++;
    };
    deps.deliveryStatus.watch(API_KEYS_CHANNEL, { notified: clear, reset: clear });
  }
  return cache;
}

export function invalidateApiKeyCache(deps: Deps): void {
  const cache = apiKeyCache.get(deps);
  if (!cache) return;
  cache.entries.clear();
  cache.generation++;
}

/** Tells every process's API key cache, at the commit of `tx`, that a key or its application changed. */
export async function notifyApiKeysChanged(tx: Db): Promise<void> {
  await tx.$executeRawUnsafe(`SELECT pg_notify('${API_KEYS_CHANNEL}', '')`);
}

function lookupApiKey(deps: Deps, keyHash: string) {
  return deps.db.apiKey.findUnique({
    where: { keyHash },
    select: {
      id: true,
      status: true,
      expiresAt: true,
      lastUsedAt: true,
      organizationId: true,
      applicationId: true,
      environmentId: true,
      environment: { select: { type: true } },
      application: { select: { status: true } },
    },
  });
}

/** The key's row: from the cache while invalidations reach this process, else looked up. */
async function apiKeyRow(deps: Deps, keyHash: string, now: number): Promise<KeyRow | null> {
  const cache = cacheOf(deps);
  if (!deps.deliveryStatus.isListening(API_KEYS_CHANNEL)) {
    if (now - cache.askedAt >= 1000) {
      cache.askedAt = now;
      void deps.deliveryStatus.listen().catch((err: unknown) => deps.log.warn({ err }, 'API key invalidation listener not connected'));
    }
    return lookupApiKey(deps, keyHash);
  }
  const entry = cache.entries.get(keyHash);
  if (entry && entry.until > now) return entry.row;
  const generation = cache.generation;
  const row = await lookupApiKey(deps, keyHash);
  if (cache.generation === generation && deps.deliveryStatus.isListening(API_KEYS_CHANNEL)) {
    if (cache.entries.size >= CACHE_MAX) cache.entries.clear();
    cache.entries.set(keyHash, { row, until: now + CACHE_TTL_MS });
  }
  return row;
}

async function authenticateApiKey(key: string, deps: Deps): Promise<Authentication> {
  if (!apiKeyPattern.test(key)) return invalid('The API key is malformed.');
  const keyHash = sha256(key);
  const now = deps.clock.now();
  const row = await apiKeyRow(deps, keyHash, now.getTime());
  if (!row || row.status !== 'ACTIVE' || (row.expiresAt && row.expiresAt <= now)) return invalid('The API key is unknown, revoked or expired.');
  if (row.application.status !== 'ACTIVE')
    return {
      principal: null,
      credentialError: new DomainError('APPLICATION_INACTIVE', `The key's application is ${row.application.status.toLowerCase()}.`),
    };
  // lastUsedAt is advisory: written at most once a minute per key, off the request path.
  if (!row.lastUsedAt || now.getTime() - row.lastUsedAt.getTime() > 60_000) {
    row.lastUsedAt = now;
    deps.db.apiKey.update({ where: { id: row.id }, data: { lastUsedAt: now } }).catch((e: unknown) => deps.log.warn({ err: e }, 'lastUsedAt update failed'));
  }
  return {
    principal: {
      type: 'apiKey',
      apiKeyId: row.id,
      organizationId: row.organizationId,
      applicationId: row.applicationId,
      environmentId: row.environmentId,
      mode: row.environment.type,
    },
    credentialError: null,
  };
}

async function authenticateOperator(key: string, deps: Deps): Promise<Authentication> {
  if (!operatorKeyPattern.test(key)) return invalid('The operator key is malformed.');
  const op = await deps.db.operator.findUnique({ where: { keyHash: sha256(key) }, select: { id: true, revokedAt: true } });
  if (!op || op.revokedAt) return invalid('The operator key is unknown or revoked.');
  return { principal: { type: 'operator', operatorId: op.id }, credentialError: null };
}

/**
 * An access token is valid while its subject exists, its credentials did not change after it was
 * issued, and its session (refresh family, `sid`) is not revoked (logout, reuse detection, password
 * reset): one query per request, the family probe on a partial index of revoked rows.
 */
async function authenticateBearer(token: string, deps: Deps): Promise<Authentication> {
  const claims = await verifyAccessToken(deps.tokenKeys, deps.config.JWT_ISSUER, token, deps.clock.now(), deps.config.ACCESS_TOKEN_TTL_SECONDS);
  if (!claims) return invalid('The access token is invalid or expired.');
  const issuedAt = claims.iat * 1000;
  const revoked = Prisma.sql`EXISTS (SELECT 1 FROM "RefreshToken" r WHERE r."familyId" = ${claims.sid}::uuid AND r."revokedAt" IS NOT NULL) AS "revoked"`;
  // Tokens issued before a password change or reset are refused (second precision, as iat).
  const stale = (changedAt: Date) => issuedAt < Math.floor(changedAt.getTime() / 1000) * 1000;
  if (claims.aud === 'member') {
    const [m] = await deps.db.$queryRaw<{ id: string; organizationId: string; role: MemberRole; credentialsChangedAt: Date; revoked: boolean }[]>`
      SELECT m."id", m."organizationId", m."role"::text AS "role", m."credentialsChangedAt", ${revoked} FROM "Member" m WHERE m."id" = ${claims.sub}::uuid AND m."removedAt" IS NULL`;
    if (!m || m.revoked || stale(m.credentialsChangedAt)) return invalid('The access token is no longer valid.');
    return {
      principal: {
        type: 'member',
        memberId: m.id,
        organizationId: m.organizationId,
        role: m.role,
        permissions: new Set(rolePermissions[m.role]),
        sessionId: claims.sid,
      },
      credentialError: null,
    };
  }
  const [h] = await deps.db.$queryRaw<{ id: string; credentialsChangedAt: Date; revoked: boolean }[]>`
    SELECT h."id", h."credentialsChangedAt", ${revoked} FROM "AccountHolder" h WHERE h."id" = ${claims.sub}::uuid`;
  if (!h || h.revoked || stale(h.credentialsChangedAt)) return invalid('The access token is no longer valid.');
  return { principal: { type: 'accountHolder', accountHolderId: h.id, sessionId: claims.sid }, credentialError: null };
}
