import { createHash } from 'node:crypto';
import { Prisma, poolOf, type PrismaClient, type RawDb } from '../db/prisma';
import { DomainError, isRetryable, sqlState, type ErrorCode, type FieldError } from '../errors';
export { isRetryable };

export { sqlState };
import { isUuid } from '../ids';
import { MAX_AMOUNT } from '../money';
import { metrics } from '../kernel/telemetry';

/**
 * The double-entry ledger: the ONE place where money moves. Other domains call only the
 * functions of this module; nothing else writes the ledger tables (docs/ledger.md).
 *
 * Every operation goes through the PostgreSQL function `ledger_post(...)` (migration
 * 20261121210100_ledger_functions): one round trip for a whole batch, which validates each item on
 * its own against the locked balance rows, writes the transactions, entries, holds and running
 * totals, and answers one result per item. A refused item writes nothing and leaves the others of
 * its batch alone.
 *
 * Amounts are integer base units (bigint here, NUMERIC(78,0) in SQL), never floats.
 */

export type LedgerAccountKind = 'CUSTOMER' | 'ESCROW' | 'SUSPENSE' | 'CHAIN_CLEARING' | 'FEES' | 'PLATFORM_REVENUE' | 'RETAINED';

/**
 * A ledger account, by what it is: CUSTOMER: ownerId = the Account id (organizationId: its
 * organization); ESCROW: ownerId = the Transaction id; SUSPENSE: ownerId = organizationId;
 * CHAIN_CLEARING, FEES, PLATFORM_REVENUE: system accounts, ownerId and organizationId null.
 * CHAIN_CLEARING is debit-normal, the others credit-normal. One balance row per (kind, ownerId,
 * assetNetworkId), created by the first posting that needs it.
 */
export interface LedgerAccountRef {
  kind: LedgerAccountKind;
  ownerId: string | null;
  organizationId: string | null;
  assetNetworkId: string;
}

export interface PostingLine {
  account: LedgerAccountRef;
  direction: 'DEBIT' | 'CREDIT';
  amount: bigint;
}

export interface PostInput {
  /** Unique across the ledger: the same key with the same payload replays; with another payload, 409. */
  idempotencyKey: string;
  /** What the transaction records, e.g. deposit.confirmed. */
  nature: string;
  organizationId?: string | null;
  referenceType?: string;
  referenceId?: string;
  metadata?: Record<string, unknown>;
  /** At least two lines; debits = credits in each asset-network; amounts > 0. */
  lines: PostingLine[];
  postedAt: Date;
}

export interface CreateHoldInput {
  idempotencyKey: string;
  nature: string;
  organizationId?: string | null;
  referenceType?: string;
  referenceId?: string;
  debit: LedgerAccountRef;
  credit: LedgerAccountRef;
  amount: bigint;
  /** The expiry job releases the hold from then on; posting or voiding it is refused from then on. */
  expiresAt?: Date | null;
  postedAt: Date;
}

export interface ResolveHoldInput {
  holdId: string;
  idempotencyKey: string;
  nature: string;
  postedAt: Date;
}

export interface LedgerResult {
  ledgerTransactionId: string;
  replayed: boolean;
}

export interface Balance {
  assetNetworkId: string;
  /** The balance in its normal direction: credits - debits (credit-normal) or debits - credits (CHAIN_CLEARING). */
  posted: bigint;
  pendingDebits: bigint;
  pendingCredits: bigint;
  /** posted minus the pending amounts leaving it (pending debits of a credit-normal account). */
  available: bigint;
  /** Entries posted to the account so far (each entry's accountVersion is 1..version). */
  version: bigint;
  updatedAt: Date | null;
}

export const LEDGER_ACCOUNT_KINDS: readonly LedgerAccountKind[] = ['CUSTOMER', 'ESCROW', 'SUSPENSE', 'CHAIN_CLEARING', 'FEES', 'PLATFORM_REVENUE', 'RETAINED'];
const SYSTEM_KINDS = new Set<LedgerAccountKind>(['CHAIN_CLEARING', 'FEES', 'PLATFORM_REVENUE']);
export const isDebitNormal = (kind: LedgerAccountKind) => kind === 'CHAIN_CLEARING';

// ------------------------------------------------------------------------------------------------
// Errors

export type LedgerErrorReason =
  | 'INVALID_POSTING'
  | 'UNKNOWN_ACCOUNT'
  | 'UNKNOWN_ASSET_NETWORK'
  | 'ACCOUNT_MISMATCH'
  | 'INSUFFICIENT_FUNDS'
  | 'ACCOUNT_FROZEN'
  | 'ACCOUNT_CLOSED'
  | 'IDEMPOTENCY_CONFLICT'
  | 'HOLD_NOT_FOUND'
  | 'HOLD_RESOLVED'
  | 'HOLD_EXPIRED'
  | 'HOLD_NOT_EXPIRED'
  | 'AMOUNT_OUT_OF_RANGE';

const reasonCodes: Record<LedgerErrorReason, ErrorCode> = {
  INVALID_POSTING: 'VALIDATION_FAILED',
  UNKNOWN_ACCOUNT: 'VALIDATION_FAILED',
  UNKNOWN_ASSET_NETWORK: 'VALIDATION_FAILED',
  ACCOUNT_MISMATCH: 'VALIDATION_FAILED',
  INSUFFICIENT_FUNDS: 'INVALID_STATE',
  ACCOUNT_FROZEN: 'INVALID_STATE',
  ACCOUNT_CLOSED: 'INVALID_STATE',
  IDEMPOTENCY_CONFLICT: 'CONFLICT',
  HOLD_NOT_FOUND: 'NOT_FOUND',
  HOLD_RESOLVED: 'INVALID_STATE',
  HOLD_EXPIRED: 'INVALID_STATE',
  HOLD_NOT_EXPIRED: 'INVALID_STATE',
  AMOUNT_OUT_OF_RANGE: 'INVALID_STATE',
};

/**
 * A refused ledger operation: a DomainError (so it answers its status if it reaches a caller:
 * VALIDATION_FAILED 400, INVALID_STATE 409, CONFLICT 409, NOT_FOUND 404) with the precise
 * `reason` for domain code to branch on. Nothing was written.
 */
export class LedgerError extends DomainError {
  readonly reason: LedgerErrorReason;
  constructor(reason: LedgerErrorReason, detail: string, fieldErrors?: FieldError[]) {
    super(reasonCodes[reason], detail, fieldErrors ? { fieldErrors } : {});
    this.reason = reason;
  }
}

const invalid = (field: string, message: string) => new LedgerError('INVALID_POSTING', `${field}: ${message}`, [{ field, message }]);

// ------------------------------------------------------------------------------------------------
// Validation and the canonical payload

const KEY_PATTERN = /^[\x20-\x7e]{1,255}$/;

function checkAmount(amount: unknown, field: string): bigint {
  if (typeof amount !== 'bigint') throw invalid(field, 'must be a bigint of base units');
  if (amount <= 0n) throw invalid(field, 'must be greater than 0');
  if (amount > MAX_AMOUNT) throw invalid(field, `must be at most 2^256 - 1 (${MAX_AMOUNT})`);
  return amount;
}

function checkUuid(value: unknown, field: string): string {
  if (!isUuid(value)) throw invalid(field, 'must be a uuid');
  return value.toLowerCase();
}

function checkRef(ref: LedgerAccountRef | undefined, field: string): LedgerAccountRef {
  if (!ref || typeof ref !== 'object') throw invalid(field, 'is required');
  if (!LEDGER_ACCOUNT_KINDS.includes(ref.kind)) throw invalid(`${field}.kind`, `must be one of ${LEDGER_ACCOUNT_KINDS.join(', ')}`);
  const assetNetworkId = checkUuid(ref.assetNetworkId, `${field}.assetNetworkId`);
  if (SYSTEM_KINDS.has(ref.kind)) {
    if (ref.ownerId != null || ref.organizationId != null)
      throw invalid(field, `a ${ref.kind} account is a system account: ownerId and organizationId must be null`);
    return { kind: ref.kind, ownerId: null, organizationId: null, assetNetworkId };
  }
  const ownerId = checkUuid(ref.ownerId, `${field}.ownerId`);
  const organizationId = checkUuid(ref.organizationId, `${field}.organizationId`);
  if (ref.kind === 'SUSPENSE' && ownerId !== organizationId)
    throw invalid(field, 'a SUSPENSE account is owned by its organization: ownerId must equal organizationId');
  return { kind: ref.kind, ownerId, organizationId, assetNetworkId };
}

function checkDate(value: unknown, field: string): Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) throw invalid(field, 'must be a valid Date');
  return value;
}

/** Canonical JSON (sorted keys), for payload hashes. Refuses what JSON cannot carry exactly. */
function canonical(value: unknown, field: string): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map((v, i) => canonical(v, `${field}[${i}]`)).join(',')}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw invalid(field, 'must be finite');
      return JSON.stringify(value);
    case 'object':
      return `{${Object.keys(value as object)
        .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
        .sort()
        .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k], `${field}.${k}`)}`)
        .join(',')}}`;
    default:
      throw invalid(field, `cannot hold a ${typeof value} (amounts in metadata travel as decimal strings)`);
  }
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The canonical text of an operation's payload, hashed for idempotency: one field per line, free
 * text JSON-encoded (so no separator can appear inside a field), metadata as canonical JSON,
 * posting lines sorted (their order means nothing). postedAt is left out: a retry later replays.
 */
const refText = (r: LedgerAccountRef) => `${r.kind}|${r.ownerId ?? ''}|${r.organizationId ?? ''}|${r.assetNetworkId}`;
function payloadText(
  op: Op,
  nature: string,
  rec: { organizationId: string | null; referenceType: string | null; referenceId: string | null; metadata: Record<string, unknown> | null },
  rest: string[],
): string {
  return [
    `v1 ${op}`,
    JSON.stringify(nature),
    rec.organizationId ?? '',
    JSON.stringify(rec.referenceType),
    rec.referenceId ?? '',
    rec.metadata ? canonical(rec.metadata, 'metadata') : 'null',
    ...rest,
  ].join('\n');
}

type Op = 'post' | 'hold' | 'post_hold' | 'void_hold' | 'expire_hold';

/** One validated operation, ready for ledger_post. */
interface Item {
  op: Op;
  key: string;
  hash: string;
  nature: string;
  organizationId: string | null;
  referenceType: string | null;
  referenceId: string | null;
  metadata: Record<string, unknown> | null;
  postedAt: Date;
  lines: { ref: LedgerAccountRef; debit: boolean; amount: bigint }[];
  holdId?: string;
  amount?: bigint | null;
  expiresAt?: Date | null;
}

function common(input: { idempotencyKey: string; nature: string; postedAt: Date }) {
  if (typeof input.idempotencyKey !== 'string' || !KEY_PATTERN.test(input.idempotencyKey))
    throw invalid('idempotencyKey', 'must be 1 to 255 printable ASCII characters');
  if (typeof input.nature !== 'string' || !/^\S.{0,99}$/.test(input.nature)) throw invalid('nature', 'must be 1 to 100 characters');
  return { key: input.idempotencyKey, nature: input.nature, postedAt: checkDate(input.postedAt, 'postedAt') };
}

function recordFields(input: { organizationId?: string | null; referenceType?: string; referenceId?: string; metadata?: Record<string, unknown> }) {
  const organizationId = input.organizationId == null ? null : checkUuid(input.organizationId, 'organizationId');
  if (input.referenceType !== undefined && (typeof input.referenceType !== 'string' || input.referenceType.length < 1 || input.referenceType.length > 100))
    throw invalid('referenceType', 'must be 1 to 100 characters');
  const referenceId = input.referenceId === undefined ? null : checkUuid(input.referenceId, 'referenceId');
  if (input.metadata !== undefined && (input.metadata === null || typeof input.metadata !== 'object' || Array.isArray(input.metadata)))
    throw invalid('metadata', 'must be an object');
  const metadata = input.metadata ?? null;
  if (metadata) canonical(metadata, 'metadata');
  return { organizationId, referenceType: input.referenceType ?? null, referenceId, metadata };
}

function preparePost(input: PostInput): Item {
  const c = common(input);
  const rec = recordFields(input);
  if (!Array.isArray(input.lines) || input.lines.length < 2) throw invalid('lines', 'a posting needs at least two lines');
  const net = new Map<string, bigint>();
  const lines = input.lines.map((l, i) => {
    const ref = checkRef(l?.account, `lines[${i}].account`);
    if (l.direction !== 'DEBIT' && l.direction !== 'CREDIT') throw invalid(`lines[${i}].direction`, 'must be DEBIT or CREDIT');
    const amount = checkAmount(l.amount, `lines[${i}].amount`);
    const debit = l.direction === 'DEBIT';
    net.set(ref.assetNetworkId, (net.get(ref.assetNetworkId) ?? 0n) + (debit ? amount : -amount));
    return { ref, debit, amount };
  });
  for (const [assetNetworkId, diff] of net)
    if (diff !== 0n) throw invalid('lines', `debits and credits differ by ${diff < 0n ? -diff : diff} in asset-network ${assetNetworkId}`);
  // Line order does not change what a posting means: the canonical form sorts them.
  const canonicalLines = lines.map((l) => `${refText(l.ref)}|${l.debit ? 'D' : 'C'}|${l.amount}`).sort();
  const hash = sha256(payloadText('post', c.nature, rec, canonicalLines));
  return { op: 'post', ...c, ...rec, hash, lines };
}

function prepareHold(input: CreateHoldInput): Item {
  const c = common(input);
  const rec = recordFields(input);
  const debit = checkRef(input.debit, 'debit');
  const credit = checkRef(input.credit, 'credit');
  const amount = checkAmount(input.amount, 'amount');
  if (debit.assetNetworkId !== credit.assetNetworkId) throw invalid('credit.assetNetworkId', 'a hold moves one asset-network: debit and credit must match');
  if (debit.kind === credit.kind && debit.ownerId === credit.ownerId) throw invalid('credit', 'must be another account than debit');
  const expiresAt = input.expiresAt == null ? null : checkDate(input.expiresAt, 'expiresAt');
  if (expiresAt && expiresAt.getTime() <= c.postedAt.getTime()) throw invalid('expiresAt', 'must be after postedAt');
  const hash = sha256(payloadText('hold', c.nature, rec, [refText(debit), refText(credit), amount.toString(), expiresAt ? expiresAt.toISOString() : '']));
  return {
    op: 'hold',
    ...c,
    ...rec,
    hash,
    expiresAt,
    lines: [
      { ref: debit, debit: true, amount },
      { ref: credit, debit: false, amount },
    ],
  };
}

function prepareResolution(op: 'post_hold' | 'void_hold' | 'expire_hold', input: ResolveHoldInput & { amount?: bigint }): Item {
  const c = common(input);
  const holdId = checkUuid(input.holdId, 'holdId');
  const amount = input.amount === undefined ? null : checkAmount(input.amount, 'amount');
  const none = { organizationId: null, referenceType: null, referenceId: null, metadata: null };
  const hash = sha256(payloadText(op, c.nature, none, [holdId, amount === null ? 'all' : amount.toString()]));
  return { op, ...c, organizationId: null, referenceType: null, referenceId: null, metadata: null, hash, lines: [], holdId, amount };
}

// ------------------------------------------------------------------------------------------------
// Execution: one call of ledger_post per batch, retried on deadlocks and serialization failures.

interface RawResult {
  s: 'ok' | 'replayed' | 'error';
  id?: string;
  hold?: string | null;
  reason?: LedgerErrorReason;
  msg?: string;
}

type Outcome = { ok: true; ledgerTransactionId: string; holdId: string | null; replayed: boolean } | { ok: false; error: LedgerError };

/** The parameters of ledger_post: the batch as parallel typed arrays (see its header in the migration). */
function batchArgs(items: Item[]): unknown[] {
  const refIndex = new Map<string, number>();
  const r = { kind: [] as string[], owner: [] as (string | null)[], org: [] as (string | null)[], an: [] as string[], create: [] as boolean[] };
  const x = {
    op: [] as string[],
    key: [] as string[],
    hash: [] as string[],
    nature: [] as string[],
    org: [] as (string | null)[],
    rt: [] as (string | null)[],
    ri: [] as (string | null)[],
    meta: [] as (string | null)[],
    at: [] as string[],
    lo: [] as (number | null)[],
    hi: [] as (number | null)[],
    hid: [] as (string | null)[],
    m: [] as (string | null)[],
    exp: [] as (string | null)[],
    dup: [] as boolean[],
  };
  const l = { t: [] as number[], a: [] as number[], d: [] as boolean[], m: [] as string[] };
  const keyCount = new Map<string, number>();
  for (const it of items) keyCount.set(it.key, (keyCount.get(it.key) ?? 0) + 1);
  let at = 0;
  items.forEach((it, idx) => {
    at = Math.max(at, it.postedAt.getTime());
    const lo = l.t.length + 1;
    for (const line of it.lines) {
      const rk = refText(line.ref);
      let a = refIndex.get(rk);
      if (a === undefined) {
        a = r.kind.length + 1;
        refIndex.set(rk, a);
        r.kind.push(line.ref.kind);
        r.owner.push(line.ref.ownerId);
        r.org.push(line.ref.organizationId);
        r.an.push(line.ref.assetNetworkId);
        r.create.push(false);
      }
      // A balance row is created when it may be needed: credited, or debited without a funds check.
      // A customer account only ever debited cannot have funds without a row.
      if (!line.debit || line.ref.kind !== 'CUSTOMER') r.create[a - 1] = true;
      l.t.push(idx + 1);
      l.a.push(a);
      l.d.push(line.debit);
      l.m.push(line.amount.toString());
    }
    x.op.push(it.op);
    x.key.push(it.key);
    x.hash.push(it.hash);
    x.nature.push(it.nature);
    x.org.push(it.organizationId);
    x.rt.push(it.referenceType);
    x.ri.push(it.referenceId);
    x.meta.push(it.metadata ? JSON.stringify(it.metadata) : null);
    x.at.push(it.postedAt.toISOString());
    x.lo.push(it.lines.length ? lo : null);
    x.hi.push(it.lines.length ? l.t.length : null);
    x.hid.push(it.holdId ?? null);
    x.m.push(it.amount == null ? null : it.amount.toString());
    x.exp.push(it.expiresAt ? it.expiresAt.toISOString() : null);
    x.dup.push((keyCount.get(it.key) ?? 0) > 1);
  });
  return [
    new Date(at).toISOString(),
    ...[r.kind, r.owner, r.org, r.an, r.create].map(pgArray),
    ...[x.op, x.key, x.hash, x.nature, x.org, x.rt, x.ri, x.meta, x.at, x.lo, x.hi, x.hid, x.m, x.exp, x.dup].map(pgArray),
    ...[l.t, l.a, l.d, l.m].map(pgArray),
  ];
}

/**
 * A PostgreSQL array literal: every element double-quoted with `"` and `\` escaped, NULL for null.
 * One string per array parameter is far cheaper to pass through the driver than the array itself.
 */
function pgArray(values: readonly (string | number | boolean | null)[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i) out += ',';
    out += v === null || v === undefined ? 'NULL' : typeof v === 'string' ? `"${v.replace(/[\\"]/g, '\\$&')}"` : String(v);
  }
  return out + '}';
}

const LEDGER_POST_SQL = `SELECT ledger_post($1::timestamptz,
  $2::"LedgerAccountKind"[], $3::uuid[], $4::uuid[], $5::uuid[], $6::boolean[],
  $7::text[], $8::text[], $9::text[], $10::text[], $11::uuid[], $12::text[], $13::uuid[], $14::jsonb[],
  $15::timestamptz[], $16::int[], $17::int[], $18::uuid[], $19::numeric[], $20::timestamptz[], $21::boolean[],
  $22::int[], $23::int[], $24::boolean[], $25::numeric[]) AS r`;

function outcomeOf(r: RawResult | undefined): Outcome {
  if (!r) return { ok: false, error: new LedgerError('INVALID_POSTING', 'the ledger returned no result for this operation') };
  if (r.s === 'error') return { ok: false, error: new LedgerError(r.reason ?? 'INVALID_POSTING', r.msg ?? 'refused by the ledger') };
  return { ok: true, ledgerTransactionId: r.id!, holdId: r.hold ?? null, replayed: r.s === 'replayed' };
}

/** Counters of this process's ledger calls (for tests, benchmarks and logs). */
export const ledgerMetrics = { calls: 0, items: 0, retries: 0, isolatedBatches: 0 };

const MAX_ATTEMPTS = 6;
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));
/** 5, 10, 20, 40, 80 ms, each with ±50% jitter. */
const backoff = (attempt: number) => 5 * 2 ** (attempt - 1) * (0.5 + Math.random());

/**
 * Runs ledger_post once for `items`. On the client itself (createPrisma's, the one with a pool) the
 * call is its own autocommitted transaction, retried here on a deadlock or a serialization failure.
 * Inside a caller's transaction (Prisma's interactive one or a RawDb on the pool) a failed statement
 * aborts that transaction: the error goes up as is (an overflow as AMOUNT_OUT_OF_RANGE), and the
 * caller's own retry (retryingTransaction, retryingRawTransaction, a group's rerun) runs it whole
 * again. No savepoint: Prisma 7's interactive client has `$transaction` too, so the old test for "am
 * I in a transaction" took it for the client and retried in place, in an aborted transaction (25P02).
 */
async function execute(db: RawDb, items: Item[]): Promise<Outcome[]> {
  if (!items.length) return [];
  const args = batchArgs(items);
  const autocommit = poolOf(db) !== undefined;
  for (let attempt = 1; ; attempt++) {
    let rows: { r: RawResult[] }[];
    try {
      ledgerMetrics.calls++;
      rows = await db.$queryRawUnsafe<{ r: RawResult[] }[]>(LEDGER_POST_SQL, ...args);
    } catch (e) {
      // A total (posted or pending debits or credits of an account) beyond NUMERIC(78,0): refused,
      // nothing written (the statement failed whole), never a 500 (docs/decisions.md, issue 26).
      if (sqlState(e) === '22003') throw amountOutOfRange();
      if (!autocommit || !isRetryable(e) || attempt >= MAX_ATTEMPTS) throw e;
      ledgerMetrics.retries++;
      await sleep(backoff(attempt));
      continue;
    }
    return counted(items, rows[0]!.r);
  }
}

/** The items' outcomes from ledger_post's answer, counted in the ledger's metrics. */
function counted(items: Item[], results: RawResult[]): Outcome[] {
  ledgerMetrics.items += items.length;
  const outcomes = items.map((_it, i) => outcomeOf(results[i]));
  metrics.ledgerBatchSize.observe(items.length);
  const posted = outcomes.filter((o) => o.ok && !o.replayed).length;
  if (posted) metrics.ledgerPostings.inc(posted);
  return outcomes;
}

async function one(db: RawDb, item: Item): Promise<{ ledgerTransactionId: string; holdId: string | null; replayed: boolean }> {
  const [o] = await execute(db, [item]);
  if (!o!.ok) throw o!.error;
  return { ledgerTransactionId: o!.ledgerTransactionId, holdId: o!.holdId, replayed: o!.replayed };
}

// ------------------------------------------------------------------------------------------------
// The interface

/**
 * Posts a balanced transaction. Runs in `tx` (the caller's transaction, so the posting commits or
 * rolls back with the state change it records) or on the client itself. Throws a LedgerError when
 * refused (nothing written).
 */
export async function postLedgerTransaction(tx: RawDb, input: PostInput): Promise<LedgerResult> {
  const r = await one(tx, preparePost(input));
  return { ledgerTransactionId: r.ledgerTransactionId, replayed: r.replayed };
}

/**
 * Posts several balanced transactions in the caller's transaction with ONE ledger_post call (group
 * commit of independent operations, issue 22): every balance row of the batch is locked at once, in
 * id order. Each item answers its own result or its refusal (a LedgerError, nothing of it written);
 * the others are posted either way, in list order.
 */
export async function postLedgerTransactions(tx: RawDb, inputs: readonly PostInput[]): Promise<(LedgerResult | LedgerError)[]> {
  const outcomes = await execute(tx, inputs.map(preparePost));
  return outcomes.map((o) => (o.ok ? { ledgerTransactionId: o.ledgerTransactionId, replayed: o.replayed } : (o.error as LedgerError)));
}

/** One operation for postInStatement: a balanced posting, or a hold. */
export type LedgerPosting = { post: PostInput } | { hold: CreateHoldInput };

/** What postInStatement answers per operation: its ledger transaction (and hold), or its refusal. */
export type PostedInStatement = { ledgerTransactionId: string; holdId: string | null; replayed: boolean } | LedgerError;

/**
 * Posts ledger operations (postings and holds) in the caller's transaction with ONE statement and
 * no savepoint, optionally followed in that same statement by `follow`: data-modifying common table
 * expressions of the caller (`"name" AS (…)`, comma-separated) that need the operations' results
 * (issue 22: the one posting API of group commits; the settlement groups' EXECUTED states, the
 * withdrawal requests' rows). `follow` reads the relation
 * `ledger_results("ord", "id", "hold", "s")` (ord: the operation's 1-based position in `postings`;
 * id: its ledger transaction; hold: the hold it created; s: 'ok', 'replayed' or 'error').
 *
 * Why a statement of the caller's: ledger_post locks the balance rows it writes until the commit, so
 * whatever the caller sends after it is time others queue on those rows (a shared CHAIN_CLEARING or
 * PLATFORM_REVENUE row). The caller decides its items' refusals before (what it can know: its own
 * rules, and for money leaving an account, the balance rows it locked); ledger_post still answers a
 * refusal per operation (s = 'error'), which the caller treats as it must (a group rolls back whole).
 *
 * No savepoint, no retry: a deadlock or any error aborts the caller's transaction, which retries or
 * rolls back whole; a total beyond NUMERIC(78,0) is answered as the LedgerError AMOUNT_OUT_OF_RANGE.
 */
export async function postInStatement(tx: RawDb, postings: readonly LedgerPosting[], follow?: Prisma.Sql): Promise<PostedInStatement[]> {
  if (!postings.length) return [];
  const items = postings.map((p) => ('post' in p ? preparePost(p.post) : prepareHold(p.hold)));
  const ledgerPost = new Prisma.Sql(LEDGER_POST_SQL.split(/\$\d+/), batchArgs(items) as Prisma.Sql['values']);
  const sql = Prisma.sql`WITH posted AS MATERIALIZED (${ledgerPost}),
    ledger_results AS (SELECT x."ord"::int AS "ord", (x.e->>'id')::uuid AS "id", (x.e->>'hold')::uuid AS "hold", x.e->>'s' AS "s"
                         FROM posted, jsonb_array_elements(posted.r) WITH ORDINALITY AS x(e, "ord"))
    ${follow ? Prisma.sql`, ${follow}` : Prisma.empty}
    SELECT r FROM posted`;
  let rows: { r: RawResult[] }[];
  try {
    ledgerMetrics.calls++;
    rows = await tx.$queryRaw<{ r: RawResult[] }[]>(sql);
  } catch (e) {
    throw sqlState(e) === '22003' ? amountOutOfRange() : e;
  }
  return counted(items, rows[0]!.r).map((o) => (o.ok ? { ledgerTransactionId: o.ledgerTransactionId, holdId: o.holdId, replayed: o.replayed } : o.error));
}

/** Reserves `amount` from `debit` to `credit`: pending totals move, available drops at once. */
export async function createHold(tx: RawDb, input: CreateHoldInput): Promise<{ holdId: string; ledgerTransactionId: string; replayed: boolean }> {
  const r = await one(tx, prepareHold(input));
  return { holdId: r.holdId!, ledgerTransactionId: r.ledgerTransactionId, replayed: r.replayed };
}

const amountOutOfRange = () =>
  new LedgerError(
    'AMOUNT_OUT_OF_RANGE',
    'AMOUNT_OUT_OF_RANGE: a ledger total of an account would exceed what the ledger holds (10^78 - 1 base units; numeric overflow): nothing was posted',
  );

/** Posts a pending hold, all of it or `amount` of it (the rest is released). Once. */
export async function postHold(tx: RawDb, input: ResolveHoldInput & { amount?: bigint }): Promise<LedgerResult> {
  const r = await one(tx, prepareResolution('post_hold', input));
  return { ledgerTransactionId: r.ledgerTransactionId, replayed: r.replayed };
}

/**
 * Posts several pending holds (each all of it) with ONE ledger_post call (group commit, issue 22):
 * each answers its result or its refusal (a LedgerError, nothing of it written); the others are
 * posted either way, in list order. Each once (its idempotency key).
 */
export async function postHolds(tx: RawDb, inputs: readonly ResolveHoldInput[]): Promise<(LedgerResult | LedgerError)[]> {
  const outcomes = await execute(
    tx,
    inputs.map((i) => prepareResolution('post_hold', i)),
  );
  return outcomes.map((o) => (o.ok ? { ledgerTransactionId: o.ledgerTransactionId, replayed: o.replayed } : (o.error as LedgerError)));
}

/** Releases a pending hold without moving anything. Once. */
export async function voidHold(tx: RawDb, input: ResolveHoldInput): Promise<LedgerResult> {
  const r = await one(tx, prepareResolution('void_hold', input));
  return { ledgerTransactionId: r.ledgerTransactionId, replayed: r.replayed };
}

/** The idempotency key of a hold's expiry (deterministic, so a repeated run replays). */
export const expiryKey = (holdId: string) => `ledger:hold:${holdId}:expired`;

/**
 * Expires every PENDING hold whose expiresAt is at or before `now` (each in its own item of a
 * batch of up to 500: a hold resolved meanwhile by someone else is skipped). Returns how many this
 * call expired. Run by the `ledger.expire-holds` job every minute.
 */
export async function expireHolds(db: PrismaClient, now: Date): Promise<number> {
  let expired = 0;
  for (;;) {
    const due = await db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT "id"::text AS "id" FROM "LedgerHold" WHERE "status" = 'PENDING' AND "expiresAt" <= $1 ORDER BY "expiresAt", "id" LIMIT 500`,
      now,
    );
    if (!due.length) return expired;
    const outcomes = await execute(
      db,
      due.map((h) => prepareResolution('expire_hold', { holdId: h.id, idempotencyKey: expiryKey(h.id), nature: 'hold.expired', postedAt: now })),
    );
    const progress = outcomes.filter((o) => o.ok).length;
    expired += outcomes.filter((o) => o.ok && !o.replayed).length;
    if (due.length < 500 || progress === 0) return expired;
  }
}

/**
 * Takes, in `tx`, the shared lock every posting takes on a customer Account (the one a status change
 * takes exclusively: trigger `Account_ledger_status`), in the order ledger_post takes them. A status
 * read after it (in a later statement) is the status until the commit: a freeze or a close in flight
 * has committed before, and one that comes later waits for `tx`. For checks made before money moves
 * (docs/decisions.md, "Rules re-checked when a job carries an operation out").
 */
export async function lockAccountsForMove(tx: RawDb, accountIds: readonly string[]): Promise<void> {
  const ids = [...new Set(accountIds.map((id) => checkUuid(id, 'accountId')))];
  if (!ids.length) return;
  await tx.$executeRaw(accountMoveLocksSql(ids));
}

/**
 * lockAccountsForMove's statement (the accounts' ledger locks, shared, in key order), for a caller
 * that takes them inside a larger statement (the withdrawal request group's first statement).
 */
export const accountMoveLocksSql = (accountIds: readonly string[]): Prisma.Sql =>
  Prisma.sql`SELECT pg_advisory_xact_lock_shared(s.h) FROM (SELECT DISTINCT ledger_account_lock_key(u) AS h FROM unnest(${accountIds}::uuid[]) AS u ORDER BY 1) s`;

interface BalanceRow {
  assetNetworkId: string;
  normalBalance: 'DEBIT' | 'CREDIT';
  dp: string;
  cp: string;
  dpe: string;
  cpe: string;
  version: string;
  updatedAt: Date;
}

const BALANCE_COLUMNS = `"assetNetworkId"::text AS "assetNetworkId", "normalBalance"::text AS "normalBalance", "debitsPosted"::text AS dp, "creditsPosted"::text AS cp,
  "debitsPending"::text AS dpe, "creditsPending"::text AS cpe, "version"::text AS "version", "updatedAt"`;

function toBalance(r: BalanceRow): Balance {
  const [dp, cp, dpe, cpe] = [BigInt(r.dp), BigInt(r.cp), BigInt(r.dpe), BigInt(r.cpe)];
  const debitNormal = r.normalBalance === 'DEBIT';
  const posted = debitNormal ? dp - cp : cp - dp;
  return {
    assetNetworkId: r.assetNetworkId,
    posted,
    pendingDebits: dpe,
    pendingCredits: cpe,
    available: debitNormal ? posted - cpe : posted - dpe,
    version: BigInt(r.version),
    updatedAt: r.updatedAt,
  };
}

/** The balance of one ledger account; zeros when it has no row yet. */
export async function balanceOf(
  db: RawDb,
  ref: LedgerAccountRef,
): Promise<{ posted: bigint; pendingDebits: bigint; pendingCredits: bigint; available: bigint; version: bigint }> {
  const r = checkRef(ref, 'account');
  const rows =
    r.ownerId === null
      ? await db.$queryRawUnsafe<BalanceRow[]>(
          `SELECT ${BALANCE_COLUMNS} FROM "LedgerAccount" WHERE "kind" = $1::"LedgerAccountKind" AND "ownerId" IS NULL AND "assetNetworkId" = $2::uuid`,
          r.kind,
          r.assetNetworkId,
        )
      : await db.$queryRawUnsafe<BalanceRow[]>(
          `SELECT ${BALANCE_COLUMNS} FROM "LedgerAccount" WHERE "kind" = $1::"LedgerAccountKind" AND "ownerId" = $2::uuid AND "assetNetworkId" = $3::uuid`,
          r.kind,
          r.ownerId,
          r.assetNetworkId,
        );
  if (!rows[0]) return { posted: 0n, pendingDebits: 0n, pendingCredits: 0n, available: 0n, version: 0n };
  const { posted, pendingDebits, pendingCredits, available, version } = toBalance(rows[0]);
  return { posted, pendingDebits, pendingCredits, available, version };
}

/** Every balance of one owner (e.g. an Account's CUSTOMER balances), by asset-network id. */
export async function balancesOfOwner(db: RawDb, kind: LedgerAccountKind, ownerId: string): Promise<Balance[]> {
  const rows = await db.$queryRawUnsafe<BalanceRow[]>(
    `SELECT ${BALANCE_COLUMNS} FROM "LedgerAccount" WHERE "kind" = $1::"LedgerAccountKind" AND "ownerId" = $2::uuid ORDER BY "assetNetworkId"`,
    kind,
    checkUuid(ownerId, 'ownerId'),
  );
  return rows.map(toBalance);
}

/** The balances of many owners of one kind in one statement, by owner id (the graph's batched Account.balances). */
export async function balancesOfOwners(db: RawDb, kind: LedgerAccountKind, ownerIds: string[]): Promise<Map<string, Balance[]>> {
  const rows = await db.$queryRawUnsafe<(BalanceRow & { ownerId: string })[]>(
    `SELECT "ownerId"::text AS "ownerId", ${BALANCE_COLUMNS} FROM "LedgerAccount" WHERE "kind" = $1::"LedgerAccountKind" AND "ownerId" = ANY($2::uuid[]) ORDER BY "assetNetworkId"`,
    kind,
    ownerIds.map((id) => checkUuid(id, 'ownerId')),
  );
  const out = new Map<string, Balance[]>();
  for (const r of rows) out.set(r.ownerId, [...(out.get(r.ownerId) ?? []), toBalance(r)]);
  return out;
}

// ------------------------------------------------------------------------------------------------
// The micro-batcher

export interface LedgerBatcher {
  post(input: PostInput): Promise<LedgerResult>;
  /** Refuses new posts, commits what is queued and waits for the batches in flight. */
  close(): Promise<void>;
}

interface Waiting {
  item: Item;
  /** The balance rows (by reference) and the idempotency key it locks. */
  locks: string[];
  resolve: (r: LedgerResult) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit for postings: concurrent `post` calls are collected (until `maxBatch` are waiting,
 * or `maxWaitMs` after the first) and committed together by ONE call of ledger_post, in its own
 * transaction: one round trip and one durable commit for the whole batch. Each caller gets its own
 * result or error: ledger_post validates every item on its own, so a refused posting (insufficient
 * funds, say) fails alone. Deadlocks and serialization failures retry the batch with backoff; any
 * other failure of the batch is retried item by item, so a bad item cannot fail the others.
 * At most `concurrency` batches are in flight (one connection each); while they are, new posts
 * queue up and go together next.
 *
 * Only for postings that stand alone: a posting that must commit with other changes goes through
 * postLedgerTransaction(tx, ...) in that transaction.
 */
export function createLedgerBatcher(db: PrismaClient, opts: { maxBatch?: number; maxWaitMs?: number; concurrency?: number } = {}): LedgerBatcher {
  const maxBatch = opts.maxBatch ?? 256;
  const maxWaitMs = opts.maxWaitMs ?? 2;
  const concurrency = opts.concurrency ?? 2;
  if (!(maxBatch >= 1) || !(maxWaitMs >= 0) || !(concurrency >= 1)) throw new RangeError('maxBatch and concurrency must be >= 1, maxWaitMs >= 0');
  let queue: Waiting[] = [];
  let timer: NodeJS.Timeout | null = null;
  const inFlight = new Set<Promise<void>>();
  /** Locks held by the batches in flight (how many use each). */
  const busy = new Map<string, number>();
  let closed = false;

  const settle = (w: Waiting, o: Outcome) => {
    if (o.ok) w.resolve({ ledgerTransactionId: o.ledgerTransactionId, replayed: o.replayed });
    else w.reject(o.error);
  };

  async function run(batch: Waiting[]): Promise<void> {
    let outcomes: Outcome[];
    try {
      outcomes = await execute(
        db,
        batch.map((w) => w.item),
      );
    } catch (e) {
      if (batch.length === 1) {
        batch[0]!.reject(e);
        return;
      }
      // Not an item's refusal (those come back as results): find the one that breaks the batch.
      ledgerMetrics.isolatedBatches++;
      for (const w of batch) {
        try {
          settle(w, (await execute(db, [w.item]))[0]!);
        } catch (e1) {
          w.reject(e1);
        }
      }
      return;
    }
    batch.forEach((w, i) => settle(w, outcomes[i]!));
  }

  function flush(): void {
    if (timer) {
      clearTimeout(timer);
      timer = null;
    }
    while (queue.length && inFlight.size < concurrency) {
      // What waits is spread over the free connections, and a batch takes only postings that lock
      // nothing a batch in flight locks (balance rows, idempotency keys): the batches in flight never
      // wait for each other's row locks, so they run side by side on the database's cores. Beyond
      // its share, a batch also takes the postings that lock what it locks (they could not run
      // beside it anyway). A posting left out goes first in the next batch. Within a batch, postings
      // apply in call order.
      const size = Math.min(maxBatch, Math.ceil(queue.length / (concurrency - inFlight.size)));
      const batch: Waiting[] = [];
      const rest: Waiting[] = [];
      const mine = new Set<string>();
      for (const w of queue) {
        const take = !w.locks.some((l) => busy.has(l)) && (batch.length < size || (batch.length < maxBatch && w.locks.some((l) => mine.has(l))));
        if (take) {
          batch.push(w);
          for (const l of w.locks) mine.add(l);
        } else rest.push(w);
      }
      if (!batch.length) break;
      queue = rest;
      const locks = new Set(batch.flatMap((w) => w.locks));
      for (const l of locks) busy.set(l, (busy.get(l) ?? 0) + 1);
      const p: Promise<void> = run(batch).finally(() => {
        for (const l of locks) {
          const n = busy.get(l)! - 1;
          if (n) busy.set(l, n);
          else busy.delete(l);
        }
        inFlight.delete(p);
        // Posts that queued while this batch ran have waited already: they go next (after the
        // callers just answered had their turn to queue their next posts).
        if (queue.length) setImmediate(flush);
      });
      inFlight.add(p);
    }
  }

  return {
    post(input) {
      if (closed) return Promise.reject(new Error('the ledger batcher is closed'));
      let item: Item;
      try {
        item = preparePost(input);
      } catch (e) {
        return Promise.reject(e);
      }
      const locks = [...new Set(item.lines.map((l) => `${l.ref.kind}:${l.ref.ownerId ?? ''}:${l.ref.assetNetworkId}`)), `key:${item.key}`];
      return new Promise<LedgerResult>((resolve, reject) => {
        queue.push({ item, locks, resolve, reject });
        if (queue.length >= maxBatch) flush();
        else if (!timer && inFlight.size < concurrency) timer = setTimeout(flush, maxWaitMs);
      });
    },
    async close() {
      closed = true;
      while (queue.length || inFlight.size) {
        flush();
        await Promise.allSettled([...inFlight]);
      }
    },
  };
}

export const ledgerAccounts = {
  escrow: (t: { id: string; organizationId: string; assetNetworkId: string }) =>
    ({ kind: 'ESCROW', ownerId: t.id, organizationId: t.organizationId, assetNetworkId: t.assetNetworkId }) as const,
  suspense: (organizationId: string, assetNetworkId: string) => ({ kind: 'SUSPENSE', ownerId: organizationId, organizationId, assetNetworkId }) as const,
  clearing: (assetNetworkId: string) => ({ kind: 'CHAIN_CLEARING', ownerId: null, organizationId: null, assetNetworkId }) as const,
};
