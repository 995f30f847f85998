import { DomainError } from '../errors';
import type { Deps } from '../context';
import { rolePermissions } from './permissions';
import type { Principal } from './principal';
import { apiKeyPattern, operatorKeyPattern, sha256 } from './secrets';
import { verifyAccessToken } from './tokens';
import { Prisma } from '../db/prisma';
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
 * Verified API keys, kept for CACHE_TTL_MS per process so the hot path skips the key lookup.
 * Every change of a key or of its application's status clears the cache of the process that made
 * it (invalidateApiKeyCache); other processes notice within the TTL at most.
 */
const CACHE_TTL_MS = 5_000;
const CACHE_MAX = 10_000;
type KeyRow = NonNullable<Awaited<ReturnType<typeof lookupApiKey>>>;
const apiKeyCache = new WeakMap<Deps, Map<string, { row: KeyRow | null; until: number }>>();

export function invalidateApiKeyCache(deps: Deps): void {
  apiKeyCache.get(deps)?.clear();
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

async function authenticateApiKey(key: string, deps: Deps): Promise<Authentication> {
  if (!apiKeyPattern.test(key)) return invalid('The API key is malformed.');
  const keyHash = sha256(key);
  const now = deps.clock.now();
  let cache = apiKeyCache.get(deps);
  if (!cache) apiKeyCache.set(deps, (cache = new Map()));
  let entry = cache.get(keyHash);
  if (!entry || entry.until <= now.getTime()) {
    if (cache.size >= CACHE_MAX) cache.clear();
    entry = { row: await lookupApiKey(deps, keyHash), until: now.getTime() + CACHE_TTL_MS };
    cache.set(keyHash, entry);
  }
  const row = entry.row;
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
