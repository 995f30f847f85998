import { z } from 'zod';
import type { Context } from '../context';
import type { SigningRequest } from '../generated/prisma/client';
import { fieldError, invalidState, notFound, parseInput } from '../errors';
import { assertId, isUuid } from '../ids';
import { loadEnvironment } from '../tenancy/access';
import { adapterFor, networkRef } from '../chains/adapter';
import { canonicalTransferJson, type TransferPayload } from '../chains/secp256k1';
import { requestActor, retryingTransaction, TX_OPTIONS } from '../kernel/service';
import { auditAs } from '../audit/audit';
import { checkBeforeMoving, loadWithdrawal, lockDestinationThenWithdrawal, lockWithdrawal, markBroadcast, selfCustodyPayload } from './withdrawals';

/**
 * SelfCustody signing (docs/withdrawals.md "Signing"): a withdrawal funded from a SELF_CUSTODY
 * wallet's address waits in AWAITING_SIGNATURE. CreateSigningRequest stores the exact
 * TransferPayload (nonce = the withdrawal id), its canonical JSON (keys sorted) and the SHA-256
 * digest of those bytes. The integrator signs the canonical bytes (ECDSA secp256k1 over their
 * SHA-256, 64-byte compact r||s, hex) with the private key of the source address (m/<sourceIndex>
 * under the wallet's root) and submits the signature: it is verified against the wallet's public
 * material (the key derived at the index) before anything is broadcast; a wrong one answers 400
 * and nothing changes. No webhook for signing: the outcome is withdrawal.broadcast, then
 * withdrawal.confirmed.
 */

export const canonicalPayload = (p: TransferPayload): string => canonicalTransferJson(p);

export const createSigningRequestInput = z.object({ withdrawalId: z.string().refine(isUuid, 'must be a withdrawal id (uuid)') }).strict();
export const submitSignatureInput = z
  .object({
    signature: z
      .string()
      .trim()
      .toLowerCase()
      .regex(/^[0-9a-f]{128}$/, 'must be a 64-byte compact secp256k1 signature (r||s), 128 hex digits'),
  })
  .strict();

const parse = parseInput;

/** 404 unless the caller may see its withdrawal (the same visibility). */
export async function loadSigningRequest(ctx: Context, idArg: unknown): Promise<SigningRequest> {
  const id = assertId(idArg, 'SigningRequest');
  const row = await ctx.deps.db.signingRequest.findUnique({ where: { id } });
  if (!row) throw notFound('SigningRequest');
  try {
    await loadWithdrawal(ctx, row.withdrawalId);
  } catch {
    throw notFound('SigningRequest');
  }
  return row;
}

/**
 * CreateSigningRequest: for an AWAITING_SIGNATURE SELF_CUSTODY withdrawal of the environment's
 * organization and type (an API key: its own environment). A PENDING request of the withdrawal
 * already: answered again (one request per withdrawal). 404 for what the caller cannot see; 409
 * when the withdrawal does not wait for a signature.
 */
export async function createSigningRequest(ctx: Context, environmentIdArg: unknown, input: unknown): Promise<SigningRequest> {
  const env = await loadEnvironment(ctx, String(environmentIdArg));
  const p = ctx.principal;
  if (p?.type === 'apiKey' && p.environmentId !== env.id) throw notFound('Environment');
  const { withdrawalId } = parse(createSigningRequestInput, input);
  // Another organization's (or an unknown) withdrawal: 404, as everywhere (docs/withdrawals.md).
  const w0 = await loadWithdrawal(ctx, withdrawalId);
  if (w0.organizationId !== env.organizationId || w0.environmentType !== env.type)
    throw fieldError('withdrawalId', "must be a withdrawal of the environment's organization and type");
  const id = await ctx.deps.db.$transaction(async (tx) => {
    const w = (await lockWithdrawal(tx, w0.id))!;
    const existing = await tx.signingRequest.findUnique({ where: { withdrawalId: w.id } });
    if (existing?.status === 'PENDING') return existing.id;
    if (w.custodyMode !== 'SELF_CUSTODY') throw invalidState('A custodial withdrawal is signed by the service: it has no signing request.');
    if (w.status !== 'AWAITING_SIGNATURE') throw invalidState(`The withdrawal is ${w.status}: it does not wait for a signature.`);
    const payload = await selfCustodyPayload(tx, w);
    // What is signed is the network's (the sandbox: the canonical JSON; EVM: the unsigned transaction).
    const network = await tx.network.findUniqueOrThrow({ where: { id: w.networkId } });
    const request = await adapterFor(network.kind, tx).signingRequest(networkRef(network), payload);
    const now = ctx.deps.clock.now();
    const row = await tx.signingRequest.create({
      data: {
        organizationId: w.organizationId,
        environmentId: env.id,
        environmentType: env.type,
        withdrawalId: w.id,
        payload: request.payload as never,
        canonicalPayload: request.canonical,
        digest: request.digest,
        createdAt: now,
        updatedAt: now,
      },
    });
    await auditAs(tx, ctx.deps, requestActor(ctx), {
      organizationId: w.organizationId,
      entityType: 'SigningRequest',
      entityId: row.id,
      action: 'signing_request.created',
      after: { withdrawalId: w.id, digest: row.digest },
    });
    return row.id;
  }, TX_OPTIONS);
  return loadSigningRequest(ctx, id);
}

/**
 * Submits the integrator's signature: verified over the stored canonical payload with the key the
 * wallet derives at the source index; valid → the signed transfer is broadcast in the same
 * transaction (SIGNED, the withdrawal BROADCAST, withdrawal.broadcast). A signature that does not
 * verify: 400, nothing broadcast, the request stays PENDING. The network refusing the transfer
 * (e.g. the source address lacks funds): 409, nothing changes (fund the address, submit again).
 */
export async function submitSignature(ctx: Context, idArg: unknown, input: unknown): Promise<SigningRequest> {
  const sr0 = await loadSigningRequest(ctx, idArg);
  const { signature } = parse(submitSignatureInput, input);
  const w0 = await ctx.deps.db.withdrawal.findUniqueOrThrow({ where: { id: sr0.withdrawalId }, select: { id: true, withdrawalDestinationId: true } });
  const refusal = await retryingTransaction(ctx.deps.db, async (tx) => {
    const w = (await lockDestinationThenWithdrawal(tx, w0))!;
    const sr = await tx.signingRequest.findUniqueOrThrow({ where: { id: sr0.id } });
    if (sr.status !== 'PENDING' || w.status !== 'AWAITING_SIGNATURE')
      throw invalidState(`The signing request is ${sr.status} and its withdrawal ${w.status}: no signature is expected.`);
    // The payload is rebuilt from the wallet's public material: the stored one must still be it.
    const payload = await selfCustodyPayload(tx, w);
    const { evm: _evm, ...stored } = sr.payload as Record<string, unknown>;
    if (canonicalPayload(payload) !== canonicalPayload(stored as unknown as TransferPayload))
      throw new Error('the stored signing payload no longer matches the withdrawal');
    const network = await tx.network.findUniqueOrThrow({ where: { id: w.networkId } });
    let signed: string;
    try {
      signed = await adapterFor(network.kind, tx).assembleSigned(
        networkRef(network),
        { payload: sr.payload as Record<string, unknown>, canonical: sr.canonicalPayload },
        signature,
      );
    } catch (e) {
      if (e instanceof RangeError) throw fieldError('signature', `does not verify with the key of ${payload.fromAddress} (${e.message})`);
      throw e;
    }
    const now = ctx.deps.clock.now();
    const check = await checkBeforeMoving(tx, ctx.deps, requestActor(ctx), w, now);
    if (check?.outcome === 'REJECTED') return check.reason;
    if (check)
      throw invalidState(
        `The signed transfer cannot be sent now: ${check.reason} Nothing was broadcast; the request stays PENDING: submit the signature again later.`,
      );
    let txHash: string;
    try {
      ({ txHash } = await adapterFor(network.kind, tx, { clock: ctx.deps.clock, boss: ctx.deps.boss }).broadcast(
        networkRef(network),
        signed,
        w.organizationId,
      ));
    } catch (e) {
      if (e instanceof RangeError)
        throw invalidState(`The network refused the signed transfer: ${e.message}. Nothing was broadcast; the request stays PENDING.`);
      throw e;
    }
    await tx.signingRequest.update({ where: { id: sr.id }, data: { status: 'SIGNED', signature, signedAt: now, updatedAt: now } });
    await markBroadcast(tx, ctx.deps, requestActor(ctx), w, txHash, payload.fromAddress, now);
    return null;
  });
  if (refusal) throw invalidState(`The withdrawal was rejected: ${refusal}`);
  return loadSigningRequest(ctx, sr0.id);
}
