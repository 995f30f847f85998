import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { Prisma } from '../generated/prisma/client';
import type { EnvironmentType } from '../generated/prisma/enums';
import { DomainError, fieldError, invalidState, notFound } from '../errors';
import { assertId, isUuid, uuidv7 } from '../ids';
import { audit } from '../audit/audit';
import { loadApplication } from '../tenancy/access';
import { seal, unseal } from '../auth/secrets';
import { adapterFor, hasAdapter } from '../chains/adapter';
import * as secp from '../chains/secp256k1';

/**
 * Wallets: the roots deposit addresses derive from, one network each, in one environment of one
 * application. CUSTODIAL: the service generates the root key pair and keeps the private key sealed
 * (AES-256-GCM with the sealing key, bound to the wallet id); SELF_CUSTODY: the integrator registers
 * its root public key and keeps the private key. No answer ever carries private material.
 *
 * Who sees a wallet: a member, every wallet of its organization; an API key, the wallets of its own
 * application and environment. Anything else answers 404.
 */

export const registerWalletInput = z.object({
  networkId: z.string(),
  custodyMode: z.enum(['CUSTODIAL', 'SELF_CUSTODY']),
  label: z.string().trim().min(1, 'must not be empty').max(200).nullish(),
  publicKey: z.string().trim().max(200).nullish(),
  environmentId: z.string().nullish(),
});
export type RegisterWalletInput = z.infer<typeof registerWalletInput>;

/** The associated data binding a sealed root key to its wallet (a ciphertext copied to another row does not open). */
export const walletKeyAad = (walletId: string) => `wallet-root-key:${walletId}`;

export const walletSelect = {
  id: true,
  organizationId: true,
  applicationId: true,
  environmentId: true,
  environmentType: true,
  networkId: true,
  custodyMode: true,
  label: true,
  curve: true,
  publicKey: true,
  nextAddressIndex: true,
  createdAt: true,
} as const satisfies Prisma.WalletSelect;
export type WalletRow = Prisma.WalletGetPayload<{ select: typeof walletSelect }>;

/** The Prisma filter of the wallets the principal sees (null: none). */
export function visibleWalletWhere(ctx: Context): Prisma.WalletWhereInput | null {
  const p = ctx.principal;
  if (p?.type === 'member') return { organizationId: p.organizationId };
  if (p?.type === 'apiKey') return { organizationId: p.organizationId, applicationId: p.applicationId, environmentId: p.environmentId };
  return null;
}

export async function loadWallet(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<WalletRow> {
  const id = assertId(idArg, 'Wallet');
  const visible = visibleWalletWhere(ctx);
  if (!visible) throw notFound('Wallet');
  const wallet = await db.wallet.findFirst({ where: { AND: [{ id }, visible] }, select: walletSelect });
  if (!wallet) throw notFound('Wallet');
  return wallet;
}

/** The application of a path, for a member of its organization or an API key of it; 404 otherwise. */
export async function loadCallerApplication(ctx: Context, applicationIdArg: string) {
  const app = await loadApplication(ctx, applicationIdArg);
  const p = ctx.principal;
  if (p?.type === 'apiKey' && p.applicationId !== app.id) throw notFound('Application');
  return app;
}

/** The environment a wallet is registered in: an API key's own, or the one a member names. */
async function environmentFor(ctx: Context, applicationId: string, environmentId: string | null | undefined): Promise<{ id: string; type: EnvironmentType }> {
  const p = ctx.principal;
  if (p?.type === 'apiKey') {
    if (environmentId != null && environmentId.toLowerCase() !== p.environmentId)
      throw fieldError('environmentId', "must be omitted or the API key's own environment");
    return { id: p.environmentId, type: p.mode };
  }
  if (environmentId == null)
    throw fieldError('environmentId', 'required when a member registers a wallet: the SANDBOX or PRODUCTION environment of the application');
  const env = isUuid(environmentId)
    ? await ctx.deps.db.environment.findFirst({ where: { id: environmentId.toLowerCase(), applicationId }, select: { id: true, type: true } })
    : null;
  if (!env) throw fieldError('environmentId', 'must be an environment of the application');
  return env;
}

export async function registerWallet(ctx: Context, applicationIdArg: string, input: RegisterWalletInput): Promise<WalletRow> {
  const app = await loadCallerApplication(ctx, applicationIdArg);
  if (app.status !== 'ACTIVE') throw invalidState(`The application is ${app.status.toLowerCase()}: no new wallets.`);
  const env = await environmentFor(ctx, app.id, input.environmentId);
  const network = isUuid(input.networkId) ? await ctx.deps.db.network.findUnique({ where: { id: input.networkId.toLowerCase() } }) : null;
  if (!network) throw fieldError('networkId', 'must be the id of a network of the catalog');
  if (network.environmentType !== env.type)
    throw fieldError('networkId', `a ${env.type} environment uses ${env.type} networks only; this network is for ${network.environmentType} environments`);
  if (!hasAdapter(network.kind)) throw fieldError('networkId', `${network.kind} networks have no adapter in this version`);
  const adapter = adapterFor(network.kind);

  const now = ctx.deps.clock.now();
  const id = uuidv7(now.getTime());
  let publicKey: string;
  let sealedPrivateKey: Uint8Array<ArrayBuffer> | null = null;
  if (input.custodyMode === 'CUSTODIAL') {
    if (input.publicKey != null) throw fieldError('publicKey', 'must be omitted for a CUSTODIAL wallet: the service generates its key');
    const pair = adapter.generateKeyPair();
    publicKey = pair.publicKey;
    sealedPrivateKey = seal(ctx.deps.sealingKey, secp.bytesToHex(pair.privateKey), walletKeyAad(id));
    pair.privateKey.fill(0);
  } else {
    if (input.publicKey == null) throw fieldError('publicKey', 'required for a SELF_CUSTODY wallet: the root public key, hex');
    const normalized = adapter.normalizePublicKey(input.publicKey);
    if (!normalized) throw fieldError('publicKey', `must be a valid ${adapter.curve} public key: 33-byte compressed or 65-byte uncompressed SEC1, hex`);
    publicKey = normalized;
  }

  return ctx.deps.db.$transaction(async (tx) => {
    // One root key per network: two wallets with one key would derive the same addresses.
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'wallet-key ' + network.id + ' ' + publicKey}, 0))`;
    if (await tx.wallet.findFirst({ where: { networkId: network.id, publicKey }, select: { id: true } }))
      throw new DomainError('CONFLICT', 'This public key is registered already on this network: its deposit addresses would be handed out twice.');
    const wallet = await tx.wallet.create({
      data: {
        id,
        organizationId: app.organizationId,
        applicationId: app.id,
        environmentId: env.id,
        environmentType: env.type,
        networkId: network.id,
        custodyMode: input.custodyMode,
        label: input.label ?? null,
        curve: adapter.curve,
        publicKey,
        sealedPrivateKey,
        createdAt: now,
      },
      select: walletSelect,
    });
    await audit(tx, ctx, {
      organizationId: app.organizationId,
      entityType: 'Wallet',
      entityId: id,
      action: 'wallet.registered',
      after: { applicationId: app.id, environmentId: env.id, networkId: network.id, custodyMode: input.custodyMode, label: wallet.label, publicKey },
    });
    return wallet;
  });
}

/** A CUSTODIAL wallet's root private key, unsealed (for signing, later issues). Never leaves the process. */
export async function custodialRootKey(db: Db, sealingKey: Buffer, walletId: string): Promise<Uint8Array> {
  const w = await db.wallet.findUniqueOrThrow({ where: { id: walletId }, select: { id: true, custodyMode: true, sealedPrivateKey: true } });
  if (w.custodyMode !== 'CUSTODIAL' || !w.sealedPrivateKey) throw new Error('only CUSTODIAL wallets have a root private key with the service');
  return secp.hexToBytes(unseal(sealingKey, w.sealedPrivateKey, walletKeyAad(w.id)));
}

/** What an integrator needs to derive and verify a wallet's addresses itself (GetWalletPublicMaterial). */
export function publicMaterial(w: WalletRow) {
  return {
    walletId: w.id,
    networkId: w.networkId,
    custodyMode: w.custodyMode,
    curve: w.curve,
    publicKey: w.publicKey,
    publicKeyFormat: 'SEC1_COMPRESSED_HEX',
    chainCode: secp.chainCodeOf(w.publicKey),
    derivationScheme: secp.DERIVATION_SCHEME,
    derivationPath: 'm/{index}',
    addressFormat: secp.ADDRESS_FORMAT,
    nextDerivationIndex: w.nextAddressIndex,
  };
}
