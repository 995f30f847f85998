import type { PgBoss } from 'pg-boss';
import type { Logger } from 'pino';
import type { Db, PrismaClient } from '../db/prisma';
import type { Clock } from '../clock';
import type { Network } from '../generated/prisma/client';
import { adapterFor, chainReadable, networkRef, type StuckTransaction } from '../chains/adapter';
import { derivePrivateKey } from '../chains/secp256k1';
import { custodialRootKey } from '../custody/wallets';
import { auditAs } from '../audit/audit';
import { systemActor, TX_OPTIONS } from '../kernel/service';
import { controlledPrivateKey } from './treasury';

/**
 * Gas bumping of the platform's stuck transactions (issue 18; docs/chains.md "Stuck transactions";
 * docs/decisions.md "Gas policy"): the `treasury.fee-bump` job, every minute. For each network whose
 * adapter bumps fees (EVM, configured in this process), each transaction the platform sent that is
 * still not mined `bumpAfterSeconds` after it (or its last bump) was sent is replaced at the same
 * nonce with higher fees, signed with the custody key of its sending address:
 *
 * 1. in one database transaction, under the owning withdrawal's row lock (when a withdrawal owns it)
 *    and the sender's nonce lock: the rules re-checked (the withdrawal still BROADCAST, the
 *    transaction still the newest of its nonce and not mined, the fees under the network's cap, a
 *    key held by the service), the replacement signed and recorded with its audit entry;
 * 2. after the commit, the replacement sent. A crash between the two leaves a recorded replacement
 *    the node does not know: the next run sends it again (never a second signature), and until then
 *    the original stays in the node's pool and is followed as before.
 *
 * SELF_CUSTODY transactions are never bumped (the service holds no key; docs/decisions.md).
 */
export interface FeeBumpDeps {
  db: PrismaClient;
  clock: Clock;
  sealingKey?: Buffer;
  boss?: PgBoss | null;
  log?: Pick<Logger, 'info' | 'warn' | 'error'>;
}

export interface FeeBumpRun {
  /** Replacements signed, recorded and sent: original → replacement. */
  bumped: { networkId: string; txHash: string; replacement: string }[];
  /** Recorded replacements sent again (the node did not know them). */
  resent: string[];
  skipped: { txHash: string; why: string }[];
}

export async function bumpStuckTransactions(deps: FeeBumpDeps, opts: { networkId?: string } = {}): Promise<FeeBumpRun> {
  const run: FeeBumpRun = { bumped: [], resent: [], skipped: [] };
  const networks = (await deps.db.network.findMany({ where: { kind: 'EVM', ...(opts.networkId ? { id: opts.networkId } : {}) } })).filter(chainReadable);
  for (const network of networks) {
    const ref = networkRef(network);
    const reader = adapterFor(network.kind, deps.db, { clock: deps.clock, boss: deps.boss ?? null });
    if (!reader.stuckTransactions || !reader.prepareFeeBump || !reader.sendRecorded) continue;
    for (const stuck of await reader.stuckTransactions(ref, deps.clock.now())) {
      try {
        const r = await deps.db.$transaction((tx) => prepare(tx, deps, network, stuck), TX_OPTIONS);
        if ('skipped' in r) {
          run.skipped.push({ txHash: stuck.txHash, why: r.skipped });
          continue;
        }
        const sent = await reader.sendRecorded(ref, r.txHash);
        if ('refused' in sent) {
          run.skipped.push({ txHash: stuck.txHash, why: `the node refused ${r.txHash}: ${sent.refused}` });
          deps.log?.warn(
            { networkId: network.id, txHash: stuck.txHash, replacement: r.txHash, why: sent.refused },
            'fee bump: the node refused the replacement',
          );
        } else if (stuck.unsent) run.resent.push(r.txHash);
        else {
          run.bumped.push({ networkId: network.id, txHash: stuck.txHash, replacement: r.txHash });
          deps.log?.info({ networkId: network.id, txHash: stuck.txHash, replacement: r.txHash }, 'fee bump: stuck transaction replaced');
        }
      } catch (err) {
        // One transaction's failure (a node error, a key) never stops the others; the next run tries again.
        run.skipped.push({ txHash: stuck.txHash, why: err instanceof Error ? err.message : String(err) });
        deps.log?.error({ err, networkId: network.id, txHash: stuck.txHash }, 'fee bump failed');
      }
    }
  }
  return run;
}

/** Step 1, in `tx`: the rules re-checked, then the replacement recorded (or, unsent, the recorded one named). */
async function prepare(
  tx: Db,
  deps: FeeBumpDeps,
  network: Pick<Network, 'id' | 'kind' | 'requiredConfirmations'>,
  stuck: StuckTransaction,
): Promise<{ txHash: string } | { skipped: string }> {
  const owners = await tx.$queryRaw<{ id: string; status: string; organizationId: string }[]>`
    SELECT "id"::text AS "id", "status"::text AS "status", "organizationId"::text AS "organizationId"
      FROM "Withdrawal" WHERE "networkId" = ${network.id}::uuid AND "txHash" = ANY(${stuck.family}) ORDER BY "id" FOR UPDATE`;
  const closed = owners.find((w) => w.status !== 'BROADCAST');
  // An operator now owns the outcome (REQUIRES_RECONCILIATION, resolved): nothing is sent any more.
  if (closed) return { skipped: `its withdrawal ${closed.id} is ${closed.status}` };
  if (stuck.unsent) return { txHash: stuck.txHash };
  if (!deps.sealingKey) return { skipped: 'the job has no sealing key: it cannot sign' };
  const key = await signingKeyOf(tx, deps.sealingKey, network.id, stuck.fromAddress);
  if (!key) return { skipped: 'the service holds no key for the sending address (SELF_CUSTODY, or not the platform’s): not bumped' };
  const now = deps.clock.now();
  let r: { txHash: string } | { skipped: string };
  try {
    r = await adapterFor(network.kind, tx, { clock: deps.clock, boss: deps.boss ?? null }).prepareFeeBump!(networkRef(network), stuck.txHash, key, now);
  } finally {
    key.fill(0);
  }
  if ('txHash' in r) {
    const owner = owners[0];
    await auditAs(tx, deps, systemActor('job:treasury.fee-bump'), {
      organizationId: owner?.organizationId ?? null,
      entityType: owner ? 'Withdrawal' : 'Network',
      entityId: owner?.id ?? network.id,
      action: 'chain.fee_bumped',
      before: { txHash: stuck.txHash },
      after: { txHash: r.txHash, replaces: stuck.txHash, fromAddress: stuck.fromAddress },
    });
  }
  return r;
}

/**
 * The private key of a sending address the service holds: a deposit address of a CUSTODIAL wallet,
 * or a GENERATED treasury controlled address, of the network; null for any other (SELF_CUSTODY).
 */
async function signingKeyOf(tx: Db, sealingKey: Buffer, networkId: string, address: string): Promise<Uint8Array | null> {
  const match = { equals: address, mode: 'insensitive' as const };
  const deposit = await tx.depositAddress.findFirst({ where: { networkId, address: match }, include: { wallet: { select: { custodyMode: true } } } });
  if (deposit) {
    if (deposit.wallet.custodyMode !== 'CUSTODIAL') return null;
    const root = await custodialRootKey(tx, sealingKey, deposit.walletId);
    try {
      return derivePrivateKey(root, deposit.derivationIndex);
    } finally {
      root.fill(0);
    }
  }
  const controlled = await tx.controlledAddress.findFirst({ where: { networkId, address: match, control: 'GENERATED' } });
  return controlled?.sealedPrivateKey ? controlledPrivateKey(sealingKey, controlled) : null;
}
