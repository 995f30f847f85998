import { SignJWT, jwtVerify, importJWK, exportJWK, generateKeyPair, type JWK, type CryptoKey } from 'jose';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Config } from '../config';
import { isUuid } from '../ids';

/** Access-token audiences: a token for one principal is never accepted for the other. */
export type Audience = 'member' | 'account-holder';

export interface TokenKeys {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  kid: string;
}

/**
 * Ed25519 signing key from JWT_PRIVATE_JWK; without it, one generated on first start and kept
 * (mode 0600) under DATA_DIR so tokens survive restarts and are shared by local processes.
 */
export async function loadTokenKeys(config: Config): Promise<TokenKeys> {
  let jwk: JWK;
  if (config.JWT_PRIVATE_JWK) jwk = JSON.parse(config.JWT_PRIVATE_JWK) as JWK;
  else {
    const file = resolve(config.DATA_DIR, 'keys/jwt-ed25519.json');
    if (existsSync(file)) jwk = JSON.parse(readFileSync(file, 'utf8')) as JWK;
    else {
      const { privateKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519', extractable: true });
      jwk = { ...(await exportJWK(privateKey)), kid: crypto.randomUUID() };
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, JSON.stringify(jwk), { mode: 0o600 });
    }
  }
  const { d: _d, ...pub } = jwk;
  return {
    privateKey: (await importJWK(jwk, 'EdDSA')) as CryptoKey,
    publicKey: (await importJWK(pub, 'EdDSA')) as CryptoKey,
    kid: jwk.kid ?? 'default',
  };
}

export interface AccessClaims {
  sub: string;
  aud: Audience;
  org?: string;
  /** The session: the refresh-token family the token was issued with. */
  sid: string;
  iat: number;
}

export async function signAccessToken(
  keys: TokenKeys,
  issuer: string,
  claims: { sub: string; aud: Audience; org?: string; sid: string },
  now: Date,
  ttlSeconds: number,
): Promise<{ token: string; expiresAt: Date }> {
  const iat = Math.floor(now.getTime() / 1000);
  const token = await new SignJWT({ org: claims.org, sid: claims.sid })
    .setProtectedHeader({ alg: 'EdDSA', kid: keys.kid, typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience(claims.aud)
    .setSubject(claims.sub)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ttlSeconds)
    .setJti(crypto.randomUUID())
    .sign(keys.privateKey);
  return { token, expiresAt: new Date((iat + ttlSeconds) * 1000) };
}

/** Seconds a token's iat may lie ahead of this process's clock (clocks of API processes differ a little). */
export const CLOCK_SKEW_SECONDS = 60;

/**
 * Verifies signature, issuer, expiry (against the injected clock) and reports the audience. A token
 * must carry exp and iat, live at most `ttlSeconds` (exp - iat: the configured
 * ACCESS_TOKEN_TTL_SECONDS, so lowering it shortens every token in force) and not be issued in the
 * future (beyond CLOCK_SKEW_SECONDS): otherwise a token signed with our key could outlive any bound.
 */
export async function verifyAccessToken(keys: TokenKeys, issuer: string, token: string, now: Date, ttlSeconds: number): Promise<AccessClaims | null> {
  try {
    const { payload } = await jwtVerify(token, keys.publicKey, {
      issuer,
      audience: ['member', 'account-holder'],
      algorithms: ['EdDSA'],
      typ: 'at+jwt',
      currentDate: now,
      requiredClaims: ['exp', 'iat', 'sub'],
    });
    const aud = Array.isArray(payload.aud) ? payload.aud[0] : payload.aud;
    // Every claim we read is checked for its shape: a validly signed token with a malformed subject
    // is an invalid credential (401), never a database error.
    const { exp, iat } = payload;
    if (!isUuid(payload.sub) || !isUuid(payload.sid) || (aud !== 'member' && aud !== 'account-holder') || typeof iat !== 'number' || typeof exp !== 'number')
      return null;
    if (payload.org !== undefined && !isUuid(payload.org)) return null;
    if (exp - iat > ttlSeconds || iat > now.getTime() / 1000 + CLOCK_SKEW_SECONDS) return null;
    return { sub: payload.sub, aud, org: typeof payload.org === 'string' ? payload.org : undefined, sid: payload.sid, iat };
  } catch {
    return null;
  }
}
