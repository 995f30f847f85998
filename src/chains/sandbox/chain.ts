import { MAX_AMOUNT, numericToAmount } from '../../money';
import { createHash } from 'node:crypto';
import type { PgBoss } from 'pg-boss';
import type { Db, PoolQuery, RawDb } from '../../db/prisma';
import type { Clock } from '../../clock';
import type { SandboxTransactionStatus } from '../../generated/prisma/enums';
import { invalidState, notFound } from '../../errors';
import { CHAIN_SYNC_QUEUE, sendChainSync, type ChainSyncJob } from '../../kernel/queues';
import { jobInsertParts, jobInsertSql } from '../../kernel/job-rows';
import { escapeLiteral } from 'pg';
import { keccakHex } from '../secp256k1';
import { monotonicUuidv7 } from '../../ids';
import { Prisma } from '../../db/prisma';
import { actorOf, AUDIT_INSERT_HEAD, type Actor, type AuditInput } from '../../audit/audit';
import type { ObservedTransfer } from '../adapter';

/**
 * The sandbox chain: a deterministic blockchain persisted in PostgreSQL, one per SANDBOX network.
 *
 * - Transactions enter the mempool PENDING. Mining a block takes the mempool (PENDING and ORPHANED
 *   transactions, oldest first, at most MAX_BLOCK_TRANSACTIONS) into a new canonical block at tip + 1:
 *   each becomes MINED, or REVERTED when it was sent to fail (mined, no value moved).
 * - A block's hash is SHA-256 over (network, height, parent hash, fork number, sorted transaction
 *   hashes); a transaction's over (network, nonce, from, to, asset-network, amount, flags), the nonce
 *   being the network's next sequence number (0, 1, 2… in send order; a rolled-back send leaves a gap). The same operations in the same order
 *   give the same hashes. The fork number (blocks already seen at that height) tells a replacement
 *   block from the one it replaces.
 * - Confirmations of a MINED transaction: tip height - block height + 1; 0 for anything else.
 * - Each transaction records whose it is: the organization that sent it (senderOrganizationId: the
 *   caller of a sandbox deposit, the organization of a platform broadcast) and the organization whose
 *   deposit address receives it (recipientOrganizationId). Null: no organization.
 * - A reorganization by an organization, of depth d, orphans the last d canonical blocks (canonical =
 *   false) and mines d + 1 replacement blocks, so the new branch is longer than the old one. Only the
 *   organization's own transactions (every organization they involve is the caller) become ORPHANED
 *   (back in the mempool); every other transaction of the orphaned blocks is carried into the
 *   replacement block at the same height (same status and height, new block hash), so another
 *   organization's transaction never loses a confirmation. With includeOrphanedTransactions (the
 *   default) the replacement blocks re-include the orphaned transactions (MINED again, in a new
 *   block); without it they stay ORPHANED until a later block mines them or they are dropped. A
 *   reorganization that would leave an address spending more than it received (a carried transfer
 *   spending an orphaned one) is refused.
 * - Drop: a PENDING or ORPHANED transaction leaves the mempool for good (DROPPED). Replace: a PENDING
 *   transaction sent as replaceable becomes REPLACED by a new PENDING one (replace-by-fee), checked as
 *   a broadcast is (the sender's spendable balance). Only the sender's organization may do either (the
 *   recipient's when no organization sent it); to anyone else the transaction does not exist (404).
 * - Balances per (asset-network, address) are the sum of MINED (canonical) transactions to the
 *   address, recomputed for the addresses each change touches. The payer side is a faucet: payers'
 *   balances are not tracked.
 *
 * Every change of a network but a send runs under that network's advisory lock (one writer at a time,
 * so heights never race); a send takes only its recipients' locks (their bound) and nonces from the
 * network's sequence (issue 22: sends to different addresses run in parallel, nothing of a network is
 * held to a send's commit), and every send, alone or in a group, goes through sendTransactions. Each
 * change sends a `chain.sync` job in its transaction (src/kernel/queues.ts).
 */
export const MAX_BLOCK_TRANSACTIONS = 1000;

export interface ChainDeps {
  clock: Clock;
  boss: PgBoss | null;
}

export interface SandboxTransactionRow {
  id: string;
  networkId: string;
  assetNetworkId: string;
  txHash: string;
  fromAddress: string;
  toAddress: string;
  amount: { toFixed(): string };
  status: SandboxTransactionStatus;
  replaceable: boolean;
  replacedByTxHash: string | null;
  blockHash: string | null;
  blockHeight: number | null;
  willRevert: boolean;
  senderOrganizationId: string | null;
  recipientOrganizationId: string | null;
  createdAt: Date;
}

/**
 * Whether an organization may drop or replace a transaction (as the key holder would on a real
 * chain): it sent it, or no organization sent it and its deposit address receives it.
 */
export function mayAlter(t: Pick<SandboxTransactionRow, 'senderOrganizationId' | 'recipientOrganizationId'>, organizationId: string): boolean {
  return t.senderOrganizationId !== null ? t.senderOrganizationId === organizationId : t.recipientOrganizationId === organizationId;
}

const sha = (parts: unknown[]) => '0x' + createHash('sha256').update(JSON.stringify(parts)).digest('hex');

/** A block's hash: SHA-256 of the JSON array [network, height, parent hash, fork number, sorted transaction hashes]. */
export function blockHash(networkId: string, height: number, parentHash: string | null, fork: number, txHashes: string[]): string {
  return sha(['block', networkId, height, parentHash, fork, [...txHashes].sort()]);
}

/** A transaction's hash: SHA-256 of the JSON array ['tx', network, nonce, from, to, asset-network, amount, replaceable, revert] (sendTransactions computes it in SQL). */
export function transactionHash(
  networkId: string,
  nonce: number,
  t: { fromAddress: string; toAddress: string; assetNetworkId: string; amount: bigint; replaceable: boolean; revert: boolean },
): string {
  return sha(['tx', networkId, nonce, t.fromAddress, t.toAddress, t.assetNetworkId, t.amount.toString(), t.replaceable, t.revert]);
}

/**
 * The payer of an organization's sandbox deposits: a deterministic address per organization.
 * Remembered (bounded): a keccak in JavaScript per send and per mined transfer was a measurable
 * share of a send's CPU (issue 22), and the address never changes.
 */
const payers = new Map<string, string>();
export function payerAddress(organizationId: string): string {
  let address = payers.get(organizationId);
  if (address === undefined) {
    address = '0x' + keccakHex('ftis/sandbox/payer/' + organizationId).slice(24);
    if (payers.size >= 10_000) payers.clear();
    payers.set(organizationId, address);
  }
  return address;
}

/** Serializes the changes of one sandbox network (transaction-scoped). */
export async function lockNetwork(tx: RawDb, networkId: string): Promise<void> {
  await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${'sandbox-chain ' + networkId}, 0))`;
}

/** The canonical tip: height 0 and no hash before the first block. */
export async function tip(db: RawDb, networkId: string): Promise<{ height: number; hash: string | null }> {
  // Raw (issue 22): read in every sync chunk, also on a connection of poolTransaction (no Prisma model there).
  const [b] = await db.$queryRaw<{ height: number; hash: string }[]>`
    SELECT "height", "hash" FROM "SandboxBlock" WHERE "networkId" = ${networkId}::uuid AND "canonical" ORDER BY "height" DESC LIMIT 1`;
  return b ? { height: b.height, hash: b.hash } : { height: 0, hash: null };
}

/** A transaction as an adapter reports it, given the canonical tip height. */
export function observe(t: SandboxTransactionRow, tipHeight: number): ObservedTransfer {
  return {
    txHash: t.txHash,
    fromAddress: t.fromAddress,
    toAddress: t.toAddress,
    assetNetworkId: t.assetNetworkId,
    amount: numericToAmount(t.amount),
    status: t.status,
    blockHash: t.blockHash,
    blockHeight: t.blockHeight,
    confirmations: t.status === 'MINED' && t.blockHeight !== null ? tipHeight - t.blockHeight + 1 : 0,
    replacedByTxHash: t.replacedByTxHash,
  };
}

/**
 * Moves the balances of a set of transfers that became MINED (`sign` 1) or left the canonical chain
 * (`sign` -1): each address's `net` (received minus sent over canonical MINED transactions, kept
 * whole) moves by what changed, and `balance` is its positive part. Work follows what changed
 * (issue 22): the transfers of the block, never an address's history. The organizations' payer
 * (faucet) addresses only ever send: unbounded sources, their net negative, their balance 0.
 */
async function moveBalances(
  tx: RawDb,
  networkId: string,
  rows: { assetNetworkId: string; toAddress: string; fromAddress: string; amount: { toFixed(): string } }[],
  sign: 1n | -1n,
): Promise<void> {
  const deltas = new Map<string, { a: string; addr: string; delta: bigint }>();
  const move = (a: string, addr: string, delta: bigint) => {
    const k = `${a} ${addr}`;
    const d = deltas.get(k) ?? { a, addr, delta: 0n };
    d.delta += delta;
    deltas.set(k, d);
  };
  for (const r of rows) {
    const amount = numericToAmount(r.amount) * sign;
    move(r.assetNetworkId, r.toAddress, amount);
    move(r.assetNetworkId, r.fromAddress, -amount);
  }
  if (!deltas.size) return;
  // In key order: the rows' locks are taken in one order (the network lock serializes miners anyway).
  const moves = [...deltas.entries()].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0)).map(([, d]) => d);
  await tx.$executeRaw`
    INSERT INTO "SandboxAddressBalance" AS b ("networkId", "assetNetworkId", "address", "net", "balance")
    SELECT ${networkId}::uuid, d.a, d.addr, d.delta, GREATEST(0, d.delta)
      FROM unnest(${moves.map((m) => m.a)}::uuid[], ${moves.map((m) => m.addr)}::text[], ${moves.map((m) => m.delta.toString())}::numeric[]) AS d(a, addr, delta)
    ON CONFLICT ("networkId", "assetNetworkId", "address") DO UPDATE SET "net" = b."net" + EXCLUDED."net", "balance" = GREATEST(0, b."net" + EXCLUDED."net")`;
}

/** What sending a transaction takes; `senderOrganizationId`: the organization that sends it (null: none). */
export interface SendArgs {
  networkId: string;
  assetNetworkId: string;
  fromAddress: string;
  toAddress: string;
  amount: bigint;
  replaceable: boolean;
  revert: boolean;
  senderOrganizationId: string | null;
  /** The transaction a replacement replaces (its amount no longer awaits the recipient). */
  replacesId?: string;
  /**
   * The send's audit entry, written by the insert's own statement: given the new transaction's id;
   * its `after` gets the `txHash` the statement computes.
   */
  audit?: { actor: Actor; entry: (id: string) => AuditInput };
}

/**
 * Sends transactions of one network (a PENDING transaction each, in the mempool): a single send is
 * a list of one, a group commit of REST sends or a withdrawal broadcast group a longer one (issue 22:
 * ONE path). In the caller's transaction, whatever the number of items:
 * 1. each item's own checks, nothing read: a RangeError for a non-positive amount, INVALID_STATE
 *    beyond 2^256 - 1;
 * 2. **the recipients' locks**, one statement, in address order (no deadlock between groups; a group
 *    of several networks is sent network by network in id order): what bounds an address's incoming
 *    value. Nothing of the network is held (sends to different addresses run in parallel; the miner
 *    holds the network's lock, and the callers that check a sender's spendable balance take it
 *    first: broadcast, broadcastMany, replace);
 * 3. **the recipient's bound**, read after the locks: an address never holds more than
 *    2^256 - 1 base units (a uint256 balance). Each item is decided in list order against its
 *    recipient's balance plus every transfer still to be mined to it (PENDING, ORPHANED; less the one
 *    a replacement replaces) plus the items of the list accepted before it; one that would exceed it
 *    is refused alone (INVALID_STATE, 409), nothing of it written, the others sent. So no block ever
 *    overflows a balance, whatever order the mempool is mined in. The insert below checks it first
 *    for all the items (issue 22, session 10: one round trip less per send group): when every
 *    recipient stays within it, that is the whole decision; else the insert writes nothing and takes
 *    no nonce, and one read decides the items one by one before the accepted are inserted;
 * 4. **one insert** of the accepted items: each takes the next value of the network's nonce sequence
 *    (`sandbox_nonce_sequence`, migration 20261127014056_sandbox_nonce: unique and increasing in list
 *    order, consecutive within the statement; a refused item takes none, a rolled-back send leaves a
 *    gap), its hash computed by PostgreSQL over exactly the JSON `transactionHash` hashes, its
 *    recipient's organization (the deposit address's owner) read by the same statement, and the
 *    items' audit entries written with it;
 * 5. one `chain.sync` job when anything was sent, naming the recipients (a sync of sends alone looks
 *    at those addresses only while no block came: src/deposits/sync.ts), written by the insert's own
 *    statement when it wrote the transfers (issue 22, session 12: pg-boss's insert as a CTE,
 *    src/kernel/job-rows.ts). With BEGIN sent with the locks (poolTransaction), a send group is 3
 *    round trips: BEGIN and the locks, the insert, COMMIT.
 * Answers, per item in order, the transaction sent or the error that refused it.
 */
export async function sendTransactions(
  tx: Db | PoolQuery,
  deps: ChainDeps,
  networkId: string,
  items: readonly Omit<SendArgs, 'networkId'>[],
): Promise<(SandboxTransactionRow | Error)[]> {
  const out: (SandboxTransactionRow | Error | null)[] = items.map((a) =>
    a.amount <= 0n
      ? new RangeError('a sandbox transaction moves a positive amount')
      : a.amount > MAX_AMOUNT
        ? invalidState(`A sandbox transfer moves at most 2^256 - 1 base units (${MAX_AMOUNT}).`)
        : null,
  );
  const candidates = items.flatMap((a, i) => (out[i] === null ? [i] : []));
  if (!candidates.length) return out as Error[];
  const addresses = [...new Set(candidates.map((i) => items[i]!.toAddress))].sort();
  // Taken row by row in the array's (sorted) order. Written without parameters (the values escaped
  // as literals): the first statement of a pool transaction with none goes with its BEGIN in one
  // round trip (poolTransaction).
  await rowsOf(
    tx,
    Prisma.raw(`
    SELECT pg_advisory_xact_lock(hashtextextended(${literal('sandbox-chain ' + networkId + ' to ')}::text || p.addr, 0))::text AS locked
      FROM unnest(ARRAY[${addresses.map(literal).join(', ')}]::text[]) AS p(addr)`),
  );
  // The `chain.sync` job written by the insert's own statement (one round trip fewer), when pg-boss's
  // insert for the queue can be a part of it (src/kernel/job-rows.ts); else sent after it.
  const syncJob = deps.boss ? await jobInsertParts(deps.boss, CHAIN_SYNC_QUEUE) : null;
  const replaced = candidates.flatMap((i) => (items[i]!.replacesId ? [items[i]!.replacesId!] : []));
  // What an address holds or awaits: its balance plus every transfer still to be mined to it (less the one a replacement replaces).
  const held = (assetNetworkId: Prisma.Sql, address: Prisma.Sql) => Prisma.sql`
    (COALESCE((SELECT b."balance" FROM "SandboxAddressBalance" b
                WHERE b."networkId" = ${networkId}::uuid AND b."assetNetworkId" = ${assetNetworkId} AND b."address" = ${address}), 0)
   + COALESCE((SELECT SUM(t."amount") FROM "SandboxTransaction" t
                WHERE t."networkId" = ${networkId}::uuid AND t."assetNetworkId" = ${assetNetworkId} AND t."toAddress" = ${address}
                  AND t."status" IN ('PENDING', 'ORPHANED') AND t."id" <> ALL(${replaced}::uuid[])), 0))`;
  const now = deps.clock.now();
  const json = (v: Record<string, unknown> | null | undefined) => (v ? JSON.stringify(v) : null);
  /**
   * The items' insert with their audit entries, after the locks (its snapshot is taken once they are
   * held), guarded by the recipients' bound: every item is written, or none when an address would
   * pass it (a recipient's balance plus what it awaits plus the items' amounts; the guard takes no
   * nonce then).
   */
  const insert = async (accepted: number[]) => {
    // Ids in list order: the mempool's order (createdAt, id) is the nonces' order.
    const sent = accepted.map((i) => ({ a: items[i]!, i, id: monotonicUuidv7() }));
    const col = <T>(f: (s: (typeof sent)[number]) => T) => sent.map(f);
    const audited = sent.filter((s) => s.a.audit);
    const audits = audited.map((s) => ({
      id: s.id,
      actor: actorOf(s.a.audit!.actor.principal),
      requestId: s.a.audit!.actor.requestId,
      entry: s.a.audit!.entry(s.id),
    }));
    const syncData: ChainSyncJob = { networkId, addresses: recipientsOf(sent) };
    const rows = await rowsOf<{ id: string; txHash: string; recipientOrganizationId: string | null }>(
      tx,
      Prisma.sql`
    WITH i AS (
      SELECT * FROM unnest(${col((s) => s.id)}::uuid[], ${col((s) => s.a.assetNetworkId)}::uuid[], ${col((s) => s.a.fromAddress)}::text[],
                           ${col((s) => s.a.toAddress)}::text[], ${col((s) => s.a.amount.toString())}::numeric[], ${col((s) => s.a.replaceable)}::boolean[],
                           ${col((s) => s.a.revert)}::boolean[], ${col((s) => s.a.senderOrganizationId)}::uuid[],
                           ${col(() => JSON.stringify(['tx', networkId]).slice(0, -1) + ',')}::text[],
                           ${col((s) => ',' + JSON.stringify([s.a.fromAddress, s.a.toAddress, s.a.assetNetworkId, s.a.amount.toString(), s.a.replaceable, s.a.revert]).slice(1))}::text[])
             WITH ORDINALITY AS i("id", "an", "fr", "to", "amount", "replaceable", "revert", "sender", "head", "tail", "ord")
    ), passed AS (
      SELECT FROM (SELECT "an", "to", SUM("amount") AS "adds" FROM i GROUP BY "an", "to") p
       WHERE ${held(Prisma.sql`p."an"`, Prisma.sql`p."to"`)} + p."adds" > ${MAX_AMOUNT.toString()}::numeric
    ), n AS (
      SELECT row_number() OVER (ORDER BY g.nonce) AS "ord", g.nonce
        FROM (SELECT nextval(sandbox_nonce_sequence(${networkId}::uuid)) AS nonce
                FROM generate_series(1, CASE WHEN EXISTS (SELECT FROM passed) THEN 0 ELSE ${sent.length}::int END)) g
    ), ins AS (
      INSERT INTO "SandboxTransaction" ("id", "networkId", "assetNetworkId", "txHash", "fromAddress", "toAddress", "amount", "status",
                                        "replaceable", "willRevert", "senderOrganizationId", "recipientOrganizationId", "createdAt", "updatedAt")
      SELECT i."id", ${networkId}::uuid, i."an", '0x' || encode(sha256(convert_to(i."head" || n.nonce::text || i."tail", 'UTF8')), 'hex'),
             i."fr", i."to", i."amount", 'PENDING', i."replaceable", i."revert", i."sender",
             (SELECT d."organizationId" FROM "DepositAddress" d WHERE d."networkId" = ${networkId}::uuid AND d."address" = i."to"), ${now}, ${now}
        FROM i JOIN n ON n."ord" = i."ord"
      RETURNING "id", "txHash", "recipientOrganizationId"
    ), audited AS (
      ${Prisma.raw(AUDIT_INSERT_HEAD)}
      SELECT w."auditId", ${now}::timestamptz, w."org", w."actorType", w."actorId", w."entityType", ins."id", w."action", w."requestId", w."before",
             COALESCE(w."after", '{}'::jsonb) || jsonb_build_object('txHash', ins."txHash")
        FROM ins JOIN unnest(${audits.map((x) => x.id)}::uuid[], ${audits.map(() => monotonicUuidv7(now.getTime()))}::uuid[],
                             ${audits.map((x) => x.entry.organizationId)}::uuid[], ${audits.map((x) => x.actor.actorType)}::"PrincipalType"[],
                             ${audits.map((x) => x.actor.actorId)}::uuid[], ${audits.map((x) => x.entry.entityType)}::text[], ${audits.map((x) => x.entry.action)}::text[],
                             ${audits.map((x) => x.requestId)}::text[], ${audits.map((x) => json(x.entry.before))}::jsonb[], ${audits.map((x) => json(x.entry.after))}::jsonb[])
             AS w("id", "auditId", "org", "actorType", "actorId", "entityType", "action", "requestId", "before", "after") ON w."id" = ins."id"
    )${syncJob ? Prisma.sql`, "sync_job" AS (${jobInsertSql(syncJob, [{ data: syncData }], Prisma.sql`EXISTS (SELECT FROM ins)`)})` : Prisma.empty}
    SELECT ins."id"::text, ins."txHash", ins."recipientOrganizationId"::text AS "recipientOrganizationId" FROM ins`,
    );
    return { sent, rows };
  };
  // The common case in one statement; when the guard wrote nothing, the items are decided one by one.
  let { sent, rows } = await insert(candidates);
  if (rows.length !== sent.length) {
    // Read after the locks, as the guard did; each item against its recipient's bound, in list order.
    const key = (assetNetworkId: string, address: string) => `${assetNetworkId} ${address}`;
    const pairs = [...new Map(candidates.map((i) => [key(items[i]!.assetNetworkId, items[i]!.toAddress), items[i]!] as const)).values()];
    const heldRows = await rowsOf<{ a: string; addr: string; held: string }>(
      tx,
      Prisma.sql`
      SELECT p.a::text AS a, p.addr,
             (${held(Prisma.sql`p.a`, Prisma.sql`p.addr`)})::text AS held
        FROM unnest(${pairs.map((p) => p.assetNetworkId)}::uuid[], ${pairs.map((p) => p.toAddress)}::text[]) AS p(a, addr)`,
    );
    const holds = new Map(heldRows.map((r) => [key(r.a, r.addr), BigInt(r.held)]));
    const accepted = candidates.filter((i) => {
      const a = items[i]!;
      const k = key(a.assetNetworkId, a.toAddress);
      const h = holds.get(k) ?? 0n;
      if (h + a.amount > MAX_AMOUNT) {
        out[i] = invalidState(
          `The address ${a.toAddress} would hold more than 2^256 - 1 base units (${MAX_AMOUNT}): it holds or awaits ${h}, so it can receive at most ${MAX_AMOUNT - h} more.`,
        );
        return false;
      }
      holds.set(k, h + a.amount);
      return true;
    });
    if (!accepted.length) return out as Error[];
    ({ sent, rows } = await insert(accepted));
  }
  const written = new Map(rows.map((r) => [r.id, r]));
  for (const s of sent) {
    const w = written.get(s.id)!;
    const amount = s.a.amount.toString();
    out[s.i] = {
      id: s.id,
      networkId,
      assetNetworkId: s.a.assetNetworkId,
      txHash: w.txHash,
      fromAddress: s.a.fromAddress,
      toAddress: s.a.toAddress,
      amount: { toFixed: () => amount },
      status: 'PENDING',
      replaceable: s.a.replaceable,
      replacedByTxHash: null,
      blockHash: null,
      blockHeight: null,
      willRevert: s.a.revert,
      senderOrganizationId: s.a.senderOrganizationId,
      recipientOrganizationId: w.recipientOrganizationId,
      createdAt: now,
    };
  }
  // What the sends changed: new transfers to these addresses, nothing else (a replacement's replaced
  // transaction goes to the same address). Already written with the transfers when it could be.
  if (!syncJob) await sendChainSync(tx, deps.boss, networkId, recipientsOf(sent));
  return out as (SandboxTransactionRow | Error)[];
}

/** The addresses a send group's transfers go to, once each: what its `chain.sync` job names. */
const recipientsOf = (sent: readonly { a: { toAddress: string } }[]) => [...new Set(sent.map((s) => s.a.toAddress))];

/**
 * A text as an SQL literal (pg's escapeLiteral) for a statement without parameters. A NUL byte would
 * end a simple query's text where it stands (the input layer refuses it in every text: src/input.ts),
 * so one is refused here rather than sent.
 */
function literal(v: string): string {
  if (v.includes('\0')) throw new RangeError('a NUL byte cannot be written into a statement');
  return escapeLiteral(v);
}

/** A statement of sendTransactions in the caller's transaction: Prisma's, or a pg connection's (poolTransaction, the REST sends' groups). */
const rowsOf = <R>(tx: Db | PoolQuery, q: Prisma.Sql): Promise<R[]> => (typeof tx === 'function' ? tx<R>(q.text, q.values) : tx.$queryRaw<R[]>(q));

/** One send (sendTransactions with a list of one): the transaction, or the error that refused it thrown. */
export async function sendTransaction(tx: Db, deps: ChainDeps, a: SendArgs): Promise<SandboxTransactionRow> {
  const [r] = await sendTransactions(tx, deps, a.networkId, [a]);
  if (r instanceof Error) throw r;
  return r!;
}

/** Whether the transaction comes from its sending organization's faucet (an unbounded source). */
const fromFaucet = (t: { fromAddress: string; senderOrganizationId: string | null }) =>
  t.senderOrganizationId !== null && t.fromAddress === payerAddress(t.senderOrganizationId);

/**
 * Which of a block's transactions, in block order, their senders can pay (the faucet always can):
 * a transfer beyond its sender's balance at that point of the block is mined REVERTED (no value
 * moves), as a token transfer without the balance reverts on a real chain.
 */
async function fundedInOrder(
  tx: RawDb,
  networkId: string,
  block: {
    assetNetworkId: string;
    fromAddress: string;
    toAddress: string;
    amount: { toFixed(): string };
    willRevert: boolean;
    senderOrganizationId: string | null;
  }[],
): Promise<boolean[]> {
  const senders = block.filter((t) => !t.willRevert && !fromFaucet(t));
  const held = new Map<string, bigint>();
  if (senders.length) {
    const pairs = [...new Map(senders.map((t) => [`${t.assetNetworkId} ${t.fromAddress}`, { a: t.assetNetworkId, addr: t.fromAddress }])).values()];
    const rows = await tx.$queryRaw<{ a: string; addr: string; balance: { toFixed(): string } }[]>`
      SELECT b."assetNetworkId"::text AS a, b."address" AS addr, b."balance"
        FROM unnest(${pairs.map((p) => p.a)}::uuid[], ${pairs.map((p) => p.addr)}::text[]) AS p(a, addr)
        JOIN "SandboxAddressBalance" b ON b."networkId" = ${networkId}::uuid AND b."assetNetworkId" = p.a AND b."address" = p.addr`;
    for (const t of senders) held.set(`${t.assetNetworkId} ${t.fromAddress}`, 0n);
    for (const r of rows) held.set(`${r.a} ${r.addr}`, numericToAmount(r.balance));
  }
  return block.map((t) => {
    if (t.willRevert) return false;
    const amount = numericToAmount(t.amount);
    const from = `${t.assetNetworkId} ${t.fromAddress}`;
    const to = `${t.assetNetworkId} ${t.toAddress}`;
    if (!fromFaucet(t)) {
      const has = held.get(from)!;
      if (has < amount) return false;
      held.set(from, has - amount);
    }
    if (held.has(to)) held.set(to, held.get(to)! + amount);
    return true;
  });
}

/** A mempool transaction as mining reads it (with the number of blocks already seen at the height: the fork number). */
type MempoolRow = {
  fork: number;
  id: string | null;
  txHash: string;
  willRevert: boolean;
  assetNetworkId: string;
  toAddress: string;
  fromAddress: string;
  amount: { toFixed(): string };
  senderOrganizationId: string | null;
};

/**
 * Mines one block on top of `parent`, the canonical tip (the caller holds the network lock): the
 * mempool, after `carried` (transactions of an orphaned block at this height that keep their status:
 * a reorganization by another organization; they only change block). Raw statements only (issue 22:
 * the bench mines a block every 100 ms through REST, most of them empty; it also runs on a connection
 * of poolTransaction): one read of the mempool and the fork number, one insert of the block, one update
 * of the mined transactions, and the balances' upsert when value moved.
 */
async function mineOne(
  tx: RawDb,
  deps: ChainDeps,
  networkId: string,
  parent: { height: number; hash: string | null },
  exclude: string[],
  carried: { id: string; txHash: string }[] = [],
): Promise<{ height: number; hash: string }> {
  const height = parent.height + 1;
  // The fork number (blocks already at this height) and the mempool, oldest first, in one statement:
  // one row with a null id when the mempool is empty.
  const read = await tx.$queryRaw<MempoolRow[]>`
    SELECT f."fork", t."id"::text AS "id", t."txHash", t."willRevert", t."assetNetworkId"::text AS "assetNetworkId", t."toAddress", t."fromAddress", t."amount",
           t."senderOrganizationId"::text AS "senderOrganizationId"
      FROM (SELECT count(*)::int AS "fork" FROM "SandboxBlock" WHERE "networkId" = ${networkId}::uuid AND "height" = ${height}) f
      LEFT JOIN LATERAL (
        SELECT * FROM "SandboxTransaction"
         WHERE "networkId" = ${networkId}::uuid AND "status" IN ('PENDING', 'ORPHANED') AND NOT ("id" = ANY(${exclude}::uuid[]))
         ORDER BY "createdAt", "id" LIMIT ${Math.max(0, MAX_BLOCK_TRANSACTIONS - carried.length)}
      ) t ON true
     ORDER BY t."createdAt", t."id"`;
  const fork = read[0]!.fork;
  const mempool = read.filter((t): t is MempoolRow & { id: string } => t.id !== null);
  const hash = blockHash(
    networkId,
    height,
    parent.hash,
    fork,
    [...carried, ...mempool].map((t) => t.txHash),
  );
  const now = deps.clock.now();
  const funded = await fundedInOrder(tx, networkId, mempool);
  const succeeded = mempool.filter((t, i) => !t.willRevert && funded[i]);
  // The block, and its transactions (carried: a new block hash; the mempool's: MINED or REVERTED), in one statement.
  const moved = [
    ...carried.map((t) => ({ id: t.id, status: null })),
    ...mempool.map((t, i) => ({ id: t.id, status: !t.willRevert && funded[i] ? 'MINED' : 'REVERTED' })),
  ];
  if (moved.length)
    await tx.$executeRaw`
      WITH b AS (
        INSERT INTO "SandboxBlock" ("id", "networkId", "height", "hash", "parentHash", "canonical", "minedAt")
        VALUES (${monotonicUuidv7()}::uuid, ${networkId}::uuid, ${height}, ${hash}, ${parent.hash}, true, ${now})
      )
      UPDATE "SandboxTransaction" t
         SET "status" = COALESCE(v.s::"SandboxTransactionStatus", t."status"), "blockHash" = ${hash},
             "blockHeight" = CASE WHEN v.s IS NULL THEN t."blockHeight" ELSE ${height} END, "updatedAt" = ${now}
        FROM unnest(${moved.map((m) => m.id)}::uuid[], ${moved.map((m) => m.status)}::text[]) AS v(id, s)
       WHERE t."id" = v.id`;
  else
    await tx.$executeRaw`
      INSERT INTO "SandboxBlock" ("id", "networkId", "height", "hash", "parentHash", "canonical", "minedAt")
      VALUES (${monotonicUuidv7()}::uuid, ${networkId}::uuid, ${height}, ${hash}, ${parent.hash}, true, ${now})`;
  await moveBalances(tx, networkId, succeeded, 1n);
  return { height, hash };
}

async function mineMany(
  tx: RawDb,
  deps: ChainDeps,
  networkId: string,
  blocks: number,
  exclude: string[] = [],
  carried = new Map<number, { id: string; txHash: string }[]>(),
) {
  let last = await tip(tx, networkId);
  for (let i = 0; i < blocks; i++) last = await mineOne(tx, deps, networkId, last, exclude, carried.get(last.height + 1));
  return last;
}

/** Mines `blocks` blocks; answers the new tip. Raw statements only: in a Prisma transaction or one of poolTransaction. */
export async function mineBlocks(tx: RawDb, deps: ChainDeps, networkId: string, blocks: number): Promise<{ height: number; hash: string | null }> {
  if (!Number.isInteger(blocks) || blocks < 1) throw new RangeError('mine at least one block');
  await lockNetwork(tx, networkId);
  const r = await mineMany(tx, deps, networkId, blocks);
  await sendChainSync(tx, deps.boss, networkId);
  return r;
}

/** Per address: received minus sent over the network's MINED transactions (not floored at 0). */
async function netOf(tx: Db, networkId: string, pairs: { assetNetworkId: string; address: string }[]): Promise<Map<string, bigint>> {
  if (!pairs.length) return new Map();
  const rows = await tx.$queryRaw<{ a: string; addr: string; net: unknown }[]>`
    SELECT p.a::text AS a, p.addr, COALESCE((
      SELECT b."net" FROM "SandboxAddressBalance" b WHERE b."networkId" = ${networkId}::uuid AND b."assetNetworkId" = p.a AND b."address" = p.addr
    ), 0)::text AS net
    FROM unnest(${pairs.map((p) => p.assetNetworkId)}::uuid[], ${pairs.map((p) => p.address)}::text[]) AS p(a, addr)`;
  return new Map(rows.map((r) => [`${r.a} ${r.addr}`, BigInt(String(r.net))]));
}

/**
 * A reorganization by `organizationId`: orphans the last `depth` canonical blocks and mines depth + 1
 * replacement blocks; answers the new tip. Only the organization's own transactions of those blocks
 * (every organization they involve is the caller) are orphaned; the others are carried into the
 * replacement block at their height. 409 when it would leave an address spending more than it
 * received (another organization's carried transfer spends an orphaned one).
 */
export async function reorganize(
  tx: Db,
  deps: ChainDeps,
  networkId: string,
  depth: number,
  includeOrphanedTransactions: boolean,
  organizationId: string,
): Promise<{ height: number; hash: string | null; orphanedBlocks: number; orphanedTransactions: number }> {
  if (!Number.isInteger(depth) || depth < 1) throw new RangeError('a reorganization orphans at least one block');
  await lockNetwork(tx, networkId);
  const current = await tip(tx, networkId);
  if (depth > current.height)
    throw invalidState(`The chain has ${current.height} block${current.height === 1 ? '' : 's'}: a reorganization can orphan at most that many.`);
  const now = deps.clock.now();
  const orphaned = await tx.sandboxBlock.updateManyAndReturn({
    where: { networkId, canonical: true, height: { gt: current.height - depth } },
    data: { canonical: false },
    select: { hash: true },
  });
  const inOrphanedBlocks = { networkId, blockHash: { in: orphaned.map((b) => b.hash) }, status: { in: ['MINED' as const, 'REVERTED' as const] } };
  const callers = {
    AND: [
      { OR: [{ senderOrganizationId: organizationId }, { recipientOrganizationId: organizationId }] },
      { OR: [{ senderOrganizationId: organizationId }, { senderOrganizationId: null }] },
      { OR: [{ recipientOrganizationId: organizationId }, { recipientOrganizationId: null }] },
    ],
  };
  const mine = await tx.sandboxTransaction.findMany({
    where: { ...inOrphanedBlocks, ...callers },
    select: { id: true, assetNetworkId: true, toAddress: true, fromAddress: true, amount: true, status: true },
  });
  const receivers = [
    ...new Map(
      mine.filter((t) => t.status === 'MINED').map((t) => [`${t.assetNetworkId} ${t.toAddress}`, { assetNetworkId: t.assetNetworkId, address: t.toAddress }]),
    ).values(),
  ];
  const before = await netOf(tx, networkId, receivers);
  const transactions = await tx.sandboxTransaction.updateManyAndReturn({
    where: { id: { in: mine.map((t) => t.id) } },
    data: { status: 'ORPHANED', updatedAt: now },
    select: { id: true, assetNetworkId: true, toAddress: true, fromAddress: true },
  });
  const others = await tx.sandboxTransaction.findMany({ where: inOrphanedBlocks, select: { id: true, txHash: true, blockHeight: true } });
  const carried = new Map<number, { id: string; txHash: string }[]>();
  for (const t of others) carried.set(t.blockHeight!, [...(carried.get(t.blockHeight!) ?? []), { id: t.id, txHash: t.txHash }]);
  // Only what was MINED moved value; a REVERTED transfer of those blocks moved none.
  await moveBalances(
    tx,
    networkId,
    mine.filter((t) => t.status === 'MINED'),
    -1n,
  );
  const r = await mineMany(tx, deps, networkId, depth + 1, includeOrphanedTransactions ? [] : transactions.map((t) => t.id), carried);
  const after = await netOf(tx, networkId, receivers);
  for (const [key, net] of after)
    if (net < 0n && (before.get(key) ?? 0n) >= 0n)
      throw invalidState(
        `This reorganization would orphan value that other organizations' transactions have spent since (${key.split(' ')[1]}); reorganize fewer blocks or re-include the orphaned transactions.`,
      );
  await sendChainSync(tx, deps.boss, networkId);
  return { ...r, orphanedBlocks: orphaned.length, orphanedTransactions: transactions.length };
}

/** Loads a transaction by hash and locks its network; 404 when the chain never saw it or the organization may not alter it (mayAlter). */
async function lockedTransaction(tx: Db, txHash: string, organizationId: string): Promise<SandboxTransactionRow> {
  const found = await tx.sandboxTransaction.findUnique({
    where: { txHash },
    select: { networkId: true, senderOrganizationId: true, recipientOrganizationId: true },
  });
  if (!found || !mayAlter(found, organizationId)) throw notFound('Sandbox transaction');
  await lockNetwork(tx, found.networkId);
  return tx.sandboxTransaction.findUniqueOrThrow({ where: { txHash } });
}

/** PENDING or ORPHANED -> DROPPED (it leaves the mempool for good); anything else: 409. Another organization's transaction: 404. */
export async function dropTransaction(tx: Db, deps: ChainDeps, txHash: string, organizationId: string): Promise<SandboxTransactionRow> {
  const row = await lockedTransaction(tx, txHash, organizationId);
  if (row.status !== 'PENDING' && row.status !== 'ORPHANED')
    throw invalidState(`Only a PENDING or ORPHANED transaction can be dropped; this one is ${row.status}.`);
  const dropped = await tx.sandboxTransaction.update({ where: { id: row.id }, data: { status: 'DROPPED', updatedAt: deps.clock.now() } });
  await sendChainSync(tx, deps.boss, row.networkId);
  return dropped;
}

/**
 * What an address can send now (the caller holds the network lock): its mined balance less its
 * PENDING and ORPHANED outgoing transfers (but `except`, a transaction being replaced).
 */
export async function spendableOf(tx: Db, a: { networkId: string; assetNetworkId: string; address: string }, except?: string): Promise<bigint> {
  const pending = await tx.sandboxTransaction.aggregate({
    where: {
      networkId: a.networkId,
      assetNetworkId: a.assetNetworkId,
      fromAddress: a.address,
      status: { in: ['PENDING', 'ORPHANED'] },
      ...(except ? { id: { not: except } } : {}),
    },
    _sum: { amount: true },
  });
  return (await balanceOf(tx, a.networkId, a.assetNetworkId, a.address)) - numericToAmount(pending._sum.amount ?? 0n);
}

/**
 * A PENDING replaceable transaction -> REPLACED by a new PENDING one (same payer, recipient and asset;
 * the amount given or the same). Checked as a broadcast is: the sender (unless it is the sending
 * organization's faucet) must be able to spend the new amount once the replaced one is gone, and a
 * replacement never moves more than the transaction it replaces (it re-sends that transfer; the faucet
 * excepted). Another organization's transaction: 404.
 */
export async function replaceTransaction(
  tx: Db,
  deps: ChainDeps,
  txHash: string,
  organizationId: string,
  amount?: bigint,
): Promise<{ replaced: SandboxTransactionRow; replacement: SandboxTransactionRow }> {
  const row = await lockedTransaction(tx, txHash, organizationId);
  if (row.status !== 'PENDING') throw invalidState(`Only a PENDING transaction can be replaced; this one is ${row.status}.`);
  if (!row.replaceable) throw invalidState('This transaction was not sent as replaceable.');
  if (amount !== undefined && amount <= 0n) throw new RangeError('a sandbox transaction moves a positive amount');
  const original = numericToAmount(row.amount);
  const next = amount ?? original;
  const faucet = row.senderOrganizationId !== null && row.fromAddress === payerAddress(row.senderOrganizationId);
  if (!faucet) {
    const spendable = await spendableOf(tx, { networkId: row.networkId, assetNetworkId: row.assetNetworkId, address: row.fromAddress }, row.id);
    if (spendable < next) throw invalidState(`insufficient funds: ${row.fromAddress} can spend ${spendable}, not ${next}.`);
    if (next > original) throw invalidState(`A replacement re-sends the transfer: at most ${original} from ${row.fromAddress}, not ${next}.`);
  }
  const replacement = await sendTransaction(tx, deps, {
    networkId: row.networkId,
    assetNetworkId: row.assetNetworkId,
    fromAddress: row.fromAddress,
    toAddress: row.toAddress,
    amount: next,
    replaceable: true,
    revert: row.willRevert,
    senderOrganizationId: row.senderOrganizationId,
    replacesId: row.id,
  });
  // The replacement's send queued the chain.sync job.
  const replaced = await tx.sandboxTransaction.update({
    where: { id: row.id },
    data: { status: 'REPLACED', replacedByTxHash: replacement.txHash, updatedAt: deps.clock.now() },
  });
  return { replaced, replacement };
}

/** The balance of an address (base units) from the canonical mined transactions. */
export async function balanceOf(db: Db, networkId: string, assetNetworkId: string, address: string): Promise<bigint> {
  const row = await db.sandboxAddressBalance.findUnique({ where: { networkId_assetNetworkId_address: { networkId, assetNetworkId, address } } });
  return row ? numericToAmount(row.balance) : 0n;
}
