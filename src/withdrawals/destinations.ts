import { z } from 'zod';
import type { Context } from '../context';
import type { Db } from '../db/prisma';
import type { NetworkKind, WithdrawalDestination } from '../generated/prisma/client';
import { DomainError, fieldError, invalidState, notFound, parseInput } from '../errors';
import { assertId, isUuid } from '../ids';
import { idempotent } from '../idempotency';
import { adapterFor, hasAdapter } from '../chains/adapter';
import { normalizeAddress } from '../chains/address';
import { assertOrganization } from '../tenancy/access';
import { auditAs } from '../audit/audit';
import { emit } from '../webhooks/outbox';
import { nowFor } from '../chains/sandbox/clock';
import { requestActor, retryingTransaction, TX_OPTIONS } from '../kernel/service';

/**
 * Withdrawal destinations (docs/withdrawals.md): addresses an organization registers ahead of its
 * withdrawals (an allow-list, as BitGo address whitelists or Fireblocks whitelisted addresses). A
 * withdrawal may only go to an ACTIVE destination of its own organization (assertDestinationUsable);
 * a platform operator may block one (AdminBlockWithdrawalDestination): BLOCKED is terminal, refuses
 * new withdrawals and (once withdrawals exist) stops the pending ones.
 */

const parse = parseInput;

export const registerDestinationInput = z
  .object({
    networkId: z.string().refine(isUuid, 'must be a network id (uuid)'),
    address: z.string().trim().min(1, 'must not be empty').max(200),
    label: z.string().trim().min(1, 'must not be empty').max(200).nullish(),
  })
  .strict();
export type RegisterDestinationInput = z.infer<typeof registerDestinationInput>;

export const blockDestinationInput = z.object({ reason: z.string().trim().min(1, 'must not be empty').max(1000) }).strict();

/** What the caller may see: its organization (API keys: only destinations of their environment type); operators all. */
export function visibleWhere(ctx: Context): { organizationId?: string; environmentType?: 'SANDBOX' | 'PRODUCTION' } | null {
  const p = ctx.principal;
  if (p?.type === 'operator') return {};
  if (p?.type === 'member') return { organizationId: p.organizationId };
  if (p?.type === 'apiKey') return { organizationId: p.organizationId, environmentType: p.mode };
  return null;
}

export async function loadDestination(ctx: Context, idArg: unknown, db: Db = ctx.deps.db): Promise<WithdrawalDestination> {
  const id = assertId(idArg, 'WithdrawalDestination');
  const visible = visibleWhere(ctx);
  const row = visible ? await db.withdrawalDestination.findFirst({ where: { id, ...visible } }) : null;
  if (!row) throw notFound('WithdrawalDestination');
  return row;
}

/**
 * Registers a destination (members with payment-manage, API keys): the network must be in the
 * catalog (for an API key: of its environment type; a member's destination takes the network's
 * environment type), the address well formed for it. Registering the same (organization, network,
 * address) again answers the existing destination, whatever its status, and changes nothing (as
 * BitGo answers the existing whitelist entry). A new one is ACTIVE, with its
 * withdrawal_destination.registered event and audit entry in the same transaction.
 */
export async function registerDestination(
  ctx: Context,
  organizationIdArg: unknown,
  input: unknown,
  idempotencyKey: string | null | undefined,
): Promise<WithdrawalDestination> {
  const organizationId = assertId(organizationIdArg, 'Organization');
  assertOrganization(ctx, organizationId, 'Organization');
  const data = parse(registerDestinationInput, input);
  const p = ctx.principal;
  const network = await ctx.deps.db.network.findUnique({ where: { id: data.networkId.toLowerCase() } });
  if (!network) throw fieldError('networkId', 'is not a network of the catalog');
  if (p?.type === 'apiKey' && network.environmentType !== p.mode) throw fieldError('networkId', `must be a ${p.mode} network (the API key's environment type)`);
  if (!hasAdapter(network.kind)) throw fieldError('networkId', `${network.kind} networks have no adapter in this version: their addresses cannot be validated`);
  const address = normalizeAddress(network.kind, data.address);
  if (!adapterFor(network.kind).validateAddress(address))
    throw fieldError('address', network.kind === 'SANDBOX' ? 'must be a sandbox address: 0x and 40 hex digits' : `is not a valid ${network.kind} address`);
  const who = p?.type === 'apiKey' ? `app:${p.applicationId}` : p?.type === 'member' ? `member:${p.memberId}` : 'other';
  const request = { networkId: network.id, address, label: data.label ?? null };
  const result = await ctx.deps.db.$transaction(
    (tx) =>
      idempotent(tx, ctx, { scope: `registerWithdrawalDestination:${organizationId}:${who}`, key: idempotencyKey, request }, async () => {
        // Two registrations of one address wait for each other: the second answers the first's row.
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`withdrawal-destination ${organizationId} ${network.id} ${address}`}, 0))`;
        const existing = await tx.withdrawalDestination.findUnique({
          where: { organizationId_networkId_address: { organizationId, networkId: network.id, address } },
        });
        if (existing) return { id: existing.id };
        // Stamped on the clock its age is measured on (the payout policy's minimum age): the
        // organization's sandbox clock for a SANDBOX destination, the real one otherwise (issue 26).
        const now = await nowFor(tx, ctx.deps.clock, organizationId, network.environmentType);
        const row = await tx.withdrawalDestination.create({
          data: {
            organizationId,
            networkId: network.id,
            environmentType: network.environmentType,
            address,
            label: data.label ?? null,
            createdAt: now,
            updatedAt: now,
          },
        });
        await emit(tx, ctx.deps, organizationId, 'withdrawal_destination.registered', {
          WithdrawalDestinationId: row.id,
          OrganizationId: organizationId,
          Address: address,
        });
        await auditAs(tx, ctx.deps, requestActor(ctx), {
          organizationId,
          entityType: 'WithdrawalDestination',
          entityId: row.id,
          action: 'withdrawal_destination.registered',
          after: { status: 'ACTIVE', networkId: network.id, address, label: row.label },
        });
        return { id: row.id };
      }),
    TX_OPTIONS,
  );
  return loadDestination(ctx, result.id);
}

/**
 * For the withdrawal code: the destination, when `organizationId` may send to it now. Takes a
 * share lock on its row in `tx`, so a concurrent block waits for the withdrawal's transaction (and
 * a withdrawal created after a block sees it). 404 (NOT_FOUND) when unknown or another
 * organization's; 409 (INVALID_STATE) when BLOCKED.
 */
export async function assertDestinationUsable(tx: Db, destinationId: string, organizationId: string): Promise<WithdrawalDestination> {
  if (!isUuid(destinationId)) throw notFound('WithdrawalDestination');
  const locked = await tx.$queryRaw<{ id: string }[]>`
    SELECT "id"::text AS "id" FROM "WithdrawalDestination" WHERE "id" = ${destinationId.toLowerCase()}::uuid AND "organizationId" = ${organizationId}::uuid FOR SHARE`;
  if (!locked[0]) throw notFound('WithdrawalDestination');
  const row = await tx.withdrawalDestination.findUniqueOrThrow({ where: { id: locked[0].id } });
  if (row.status !== 'ACTIVE') throw new DomainError('INVALID_STATE', `The withdrawal destination is blocked: ${row.blockedReason ?? 'no reason given'}.`);
  return row;
}
