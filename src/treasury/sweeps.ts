import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { Prisma, TreasurySweep } from '../generated/prisma/client';
import { DomainError, fieldError, invalidState, notFound } from '../errors';
import { assertId, isUuid, uuidv7 } from '../ids';
import { idempotent } from '../idempotency';
import { amountToNumeric, amountToString, numericToAmount, positiveAmountText } from '../money';
import { adapterFor, hasAdapter, networkRef, type ObservedStatus } from '../chains/adapter';
import { derivePrivateKey } from '../chains/secp256k1';
import { custodialRootKey } from '../custody/wallets';
import { auditAs } from '../audit/audit';
import { requestActor, TX_OPTIONS } from '../kernel/service';
import { parsePaging, type Page } from '../kernel/paging';
import { chainBalances } from './treasury';
import { consumeReserveInTx } from './costs/reserve';
import { networkCostOf } from './costs/costs';

/**
 * Sweeps (docs/treasury.md): an operator moves the value of a deposit address to a HOT or WARM
 * controlled address, on SANDBOX networks only (AdminExecuteSandboxSweep). One sweep is one signed
 * transfer from one deposit address: signed with the key of the deposit address's CUSTODIAL wallet
 * (as refunds sign), broadcast through the adapter inside the database transaction that records
 * the TreasurySweep and its audit entry (the sandbox chain's mempool is in this database: both
 * commit or neither does).
 *
 * The ledger does not move: the value stays on chain and in the platform's custody, so
 * CHAIN_CLEARING and every liability are unchanged; no ledger transaction is written. The network
 * cost (the adapter's estimate) is recorded on the sweep, consumed from the network's resource
 * reserve when the network has one (409 RESERVE_EXHAUSTED when it is short), and charged to no one.
 */

const uuid = (what: string) =>
  z
    .string()
    .refine(isUuid, `must be ${what} (uuid)`)
    .transform((s) => s.toLowerCase());

export const executeSweepInput = z
  .object({
    assetNetworkId: uuid('an asset-network id'),
    fromDepositAddressId: uuid('a deposit address id'),
    toControlledAddressId: uuid('a controlled address id'),
    amount: positiveAmountText.nullish(),
  })
  .strict();

export interface SweepView {
  id: string;
  assetNetworkId: string;
  networkId: string;
  organizationId: string;
  depositAddressId: string;
  fromAddress: string;
  toControlledAddressId: string;
  toAddress: string;
  amount: string;
  networkCost: string;
  txHash: string;
  /** The transfer as the chain shows it now (null: the network has no adapter). */
  chainStatus: ObservedStatus | null;
  confirmations: number;
  operatorId: string;
  createdAt: Date;
}

async function view(db: Db, s: TreasurySweep): Promise<SweepView> {
  const network = await db.network.findUniqueOrThrow({ where: { id: s.networkId } });
  const seen = hasAdapter(network.kind) ? await adapterFor(network.kind, db).transaction(networkRef(network), s.txHash) : null;
  return {
    id: s.id,
    assetNetworkId: s.assetNetworkId,
    networkId: s.networkId,
    organizationId: s.organizationId,
    depositAddressId: s.depositAddressId,
    fromAddress: s.fromAddress,
    toControlledAddressId: s.toControlledAddressId,
    toAddress: s.toAddress,
    amount: amountToString(numericToAmount(s.amount)),
    networkCost: amountToString(numericToAmount(s.networkCost)),
    txHash: s.txHash,
    chainStatus: seen?.status ?? null,
    confirmations: seen?.confirmations ?? 0,
    operatorId: s.operatorId,
    createdAt: s.createdAt,
  };
}

export async function loadSweep(ctx: Context, idArg: unknown): Promise<SweepView> {
  const id = assertId(idArg, 'TreasurySweep');
  if (ctx.principal?.type !== 'operator') throw notFound('TreasurySweep');
  const row = await ctx.deps.db.treasurySweep.findUnique({ where: { id } });
  if (!row) throw notFound('TreasurySweep');
  return view(ctx.deps.db, row);
}

/**
 * AdminExecuteSandboxSweep. `amount`: default everything the deposit address can spend now.
 * 400: malformed; the deposit address not of the asset-network; a COLD destination or one not
 * holding the asset-network. 404: unknown deposit address, controlled address or asset-network.
 * 409: not a SANDBOX network; a SELF_CUSTODY wallet (the service cannot sign for it); an inactive
 * destination; nothing to sweep or more than the address can spend; the network resource reserve
 * cannot pay the network cost (detail `RESERVE_EXHAUSTED: …`); the network refuses the transfer.
 * With an Idempotency-Key the same request answers the same sweep.
 */
export async function executeSandboxSweep(ctx: Context, input: unknown, idempotencyKey: string | null | undefined): Promise<SweepView> {
  const p = ctx.principal;
  if (p?.type !== 'operator') throw new DomainError('PRINCIPAL_NOT_ALLOWED', 'Platform operators only.');
  const parsed = executeSweepInput.safeParse(input ?? {});
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw fieldError(i.path.map(String).join('.') || '(input)', i.message);
  }
  const data = parsed.data;
  const deps = ctx.deps;
  const created = await deps.db.$transaction(
    (tx) =>
      idempotent(tx, ctx, { scope: 'adminExecuteSandboxSweep', key: idempotencyKey, request: data }, async () => {
        const an = await tx.assetNetwork.findUnique({ where: { id: data.assetNetworkId }, include: { network: true } });
        if (!an) throw notFound('AssetNetwork');
        const network = an.network;
        // SANDBOX networks, and EVM networks since issue 18 (the adapter signs and broadcasts real transactions).
        if (!hasAdapter(network.kind))
          throw invalidState(`Sweeps run on networks with an adapter (SANDBOX, configured EVM networks); this asset-network is on a ${network.kind} network.`);
        const from = await tx.depositAddress.findUnique({
          where: { id: data.fromDepositAddressId },
          include: { wallet: { select: { id: true, custodyMode: true } } },
        });
        if (!from) throw notFound('DepositAddress');
        if (from.assetNetworkId !== an.id) throw fieldError('fromDepositAddressId', 'must be a deposit address of the asset-network');
        if (from.wallet.custodyMode !== 'CUSTODIAL')
          throw invalidState(
            'The deposit address belongs to a SELF_CUSTODY wallet: the service holds no key for it, and a sweep cannot be ' +
              "made without the integrator's signature.",
          );
        const to = await tx.controlledAddress.findUnique({ where: { id: data.toControlledAddressId } });
        if (!to) throw notFound('ControlledAddress');
        if (to.networkId !== network.id || !to.assetNetworkIds.includes(an.id))
          throw fieldError('toControlledAddressId', 'must be a controlled address holding the asset-network');
        if (to.tier === 'COLD') throw fieldError('toControlledAddressId', 'must be a HOT or WARM address: sweeps never go straight to COLD storage');
        if (!to.active) throw invalidState('The controlled address is deactivated: it receives no sweeps.');

        const balances = (await chainBalances(tx, network, an.id, [from.address]))!;
        const spendable = balances.get(from.address)!.spendable;
        const amount = data.amount != null ? BigInt(data.amount) : spendable;
        if (amount <= 0n) throw invalidState('The deposit address holds nothing to sweep (mined balance less pending transfers).');
        if (amount > spendable) throw invalidState(`The deposit address can send ${spendable}, not ${amount}.`);
        const adapter = adapterFor(network.kind, tx, { clock: deps.clock, boss: deps.boss });
        // The network cost as quoted (docs/network-costs.md): the cost table in force, else the adapter's estimate.
        const { networkCost } = await networkCostOf(tx, { assetNetworkId: an.id, operation: 'SWEEP', amount, at: deps.clock.now() });

        // Real time in the id (not the injectable clock): sweeps list in execution order even when the clock stands still.
        const id = uuidv7();
        // The network cost is paid from the network's resource reserve (docs/network-costs.md) when the network has one.
        const reserve = await consumeReserveInTx(tx, deps, { assetNetworkId: an.id, amount: networkCost, referenceType: 'TreasurySweep', referenceId: id });
        if (!reserve.ok)
          throw new DomainError(
            'CONFLICT',
            `RESERVE_EXHAUSTED: the network resource reserve holds ${reserve.balance}, the sweep's network cost is ${networkCost}.`,
          );
        const root = await custodialRootKey(tx, deps.sealingKey, from.wallet.id);
        const key = derivePrivateKey(root, from.derivationIndex);
        root.fill(0);
        const signed = await adapter
          .signTransfer(
            networkRef(network),
            {
              networkId: network.id,
              assetNetworkId: an.id,
              fromAddress: from.address,
              fromPublicKey: from.publicKey,
              toAddress: to.address,
              amount: amount.toString(),
              nonce: id,
            },
            key,
          )
          .finally(() => key.fill(0));
        let txHash: string;
        try {
          ({ txHash } = await adapter.broadcast(networkRef(network), signed, from.organizationId));
        } catch (e) {
          if (e instanceof RangeError) throw invalidState(`The network refused the sweep: ${e.message}`);
          throw e;
        }
        const now = deps.clock.now();
        await tx.treasurySweep.create({
          data: {
            id,
            assetNetworkId: an.id,
            networkId: network.id,
            organizationId: from.organizationId,
            depositAddressId: from.id,
            fromAddress: from.address,
            toControlledAddressId: to.id,
            toAddress: to.address,
            amount: amountToNumeric(amount),
            networkCost: amountToNumeric(networkCost),
            txHash,
            operatorId: p.operatorId,
            createdAt: now,
          },
        });
        await auditAs(tx, deps, requestActor(ctx), {
          organizationId: from.organizationId,
          entityType: 'TreasurySweep',
          entityId: id,
          action: 'treasury.sweep.executed',
          after: {
            assetNetworkId: an.id,
            depositAddressId: from.id,
            fromAddress: from.address,
            toControlledAddressId: to.id,
            toAddress: to.address,
            tier: to.tier,
            amount: amountToString(amount),
            networkCost: amountToString(networkCost),
            txHash,
          },
        });
        return { id };
      }),
    TX_OPTIONS,
  );
  return loadSweep(ctx, created.id);
}

/** SearchTreasurySweeps: newest first (createdAt, then id, descending), with the exact total. */
export async function searchSweeps(
  ctx: Context,
  args: { assetNetworkId?: string | null; skip?: number | null; take?: number | null },
): Promise<Page<SweepView>> {
  if (ctx.principal?.type !== 'operator') throw new DomainError('PRINCIPAL_NOT_ALLOWED', 'Platform operators only.');
  if (args.assetNetworkId != null && !isUuid(args.assetNetworkId)) throw fieldError('assetNetworkId', 'must be an asset-network id (uuid)');
  const { skip, take } = parsePaging(args);
  const where: Prisma.TreasurySweepWhereInput = args.assetNetworkId != null ? { assetNetworkId: args.assetNetworkId.toLowerCase() } : {};
  const db = ctx.deps.db;
  const [rows, total] = await db.$transaction(
    async (tx) =>
      [
        await tx.treasurySweep.findMany({ where, orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], skip, take }),
        await tx.treasurySweep.count({ where }),
      ] as const,
    { isolationLevel: 'RepeatableRead' },
  );
  const items: SweepView[] = [];
  for (const r of rows) items.push(await view(db, r));
  return { items, skip, take, total };
}
