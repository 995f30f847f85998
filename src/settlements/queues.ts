import { fromPrisma, type PgBoss } from 'pg-boss';
import type { Db } from '../db/prisma';
import { ensureQueue } from '../../jobs/work';

/**
 * The queues of release, settlement and refund work (docs/settlements.md). Jobs are sent inside the
 * transaction of the change that needs them, so a rollback leaves no job; every handler re-reads
 * state under the Transaction row lock and is idempotent (delivery is at least once).
 */
export const RELEASE_EVALUATE_QUEUE = 'release.evaluate';
export const RELEASE_SWEEP_QUEUE = 'release.sweep';
export const SETTLEMENT_EXECUTE_QUEUE = 'settlement.execute';
export const RETAINED_RELEASE_QUEUE = 'settlement.release-retained';
export const REFUND_EXECUTE_QUEUE = 'refund.execute';

/** Evaluates a transaction's release rule (milestones due → settlements requested). `startAfter`: when a time condition falls due. */
export interface ReleaseEvaluateJob { transactionId: string }
/** Evaluates every open rule (of one organization): periodic, and after a sandbox clock advance. */
export interface ReleaseSweepJob { organizationId?: string }
export interface SettlementExecuteJob { settlementId: string }
/** Re-checks retained allocations (of one account, transaction or organization; none: all) and releases those whose cause cleared. */
export interface RetainedReleaseJob { accountId?: string; transactionId?: string; organizationId?: string }
export interface RefundExecuteJob { refundId: string }

export async function createSettlementQueues(boss: PgBoss): Promise<void> {
  const base = { retryLimit: 10, retryDelay: 2, retryBackoff: true, retryDelayMax: 300, deleteAfterSeconds: 3600, notify: true } as const;
  await ensureQueue(boss, RELEASE_EVALUATE_QUEUE, base);
  await ensureQueue(boss, RELEASE_SWEEP_QUEUE, { retryLimit: 3, retryDelay: 10, deleteAfterSeconds: 3600 });
  await ensureQueue(boss, SETTLEMENT_EXECUTE_QUEUE, base);
  await ensureQueue(boss, RETAINED_RELEASE_QUEUE, base);
  await ensureQueue(boss, REFUND_EXECUTE_QUEUE, base);
}

const inTx = (tx: Db) => ({ db: fromPrisma(tx as never) });

export async function sendReleaseEvaluation(tx: Db, boss: PgBoss | null, transactionId: string, startAfter?: Date): Promise<void> {
  if (!boss) return;
  await boss.send(RELEASE_EVALUATE_QUEUE, { transactionId } satisfies ReleaseEvaluateJob, { ...inTx(tx), ...(startAfter ? { startAfter } : {}) });
}
export async function sendReleaseSweep(tx: Db, boss: PgBoss | null, organizationId?: string): Promise<void> {
  if (!boss) return;
  await boss.send(RELEASE_SWEEP_QUEUE, (organizationId ? { organizationId } : {}) satisfies ReleaseSweepJob, inTx(tx));
}
export async function sendSettlementExecution(tx: Db, boss: PgBoss | null, settlementId: string): Promise<void> {
  if (!boss) return;
  await boss.send(SETTLEMENT_EXECUTE_QUEUE, { settlementId } satisfies SettlementExecuteJob, inTx(tx));
}
export async function sendRetainedRelease(tx: Db, boss: PgBoss | null, scope: RetainedReleaseJob): Promise<void> {
  if (!boss) return;
  await boss.send(RETAINED_RELEASE_QUEUE, scope, inTx(tx));
}
export async function sendRefundExecution(tx: Db, boss: PgBoss | null, refundId: string): Promise<void> {
  if (!boss) return;
  await boss.send(REFUND_EXECUTE_QUEUE, { refundId } satisfies RefundExecuteJob, inTx(tx));
}
