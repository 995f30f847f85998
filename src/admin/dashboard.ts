import type { Context } from '../context';
import {
  DepositStatus,
  PaymentIntentStatus,
  RefundStatus,
  SettlementStatus,
  TransactionStatus,
  WebhookDeliveryStatus,
  WebhookEndpointStatus,
} from '../generated/prisma/client';
import { amountToString, numericToAmount } from '../money';
import { openDivergences } from '../treasury/reconciliation/reconciliation';
import { reserveLevels } from '../treasury/costs/reserve';

export interface StatusCount {
  status: string;
  count: number;
}

export interface TransactionVolume {
  assetNetworkId: string;
  /** Sums over the asset-network's transactions (decimal strings of base units). */
  funded: string;
  settled: string;
  refunded: string;
  byStatus: { status: string; count: number; amount: string }[];
}

export interface PlatformDashboard {
  generatedAt: Date;
  organizations: number;
  applications: number;
  transactions: StatusCount[];
  paymentIntents: StatusCount[];
  deposits: StatusCount[];
  settlements: StatusCount[];
  refunds: StatusCount[];
  volumes: TransactionVolume[];
  webhooks: {
    endpoints: StatusCount[];
    deliveries: StatusCount[];
    deadLetterCount: number;
    failedAttemptsLastHour: number;
    oldestPendingDeliveryAgeSeconds: number | null;
  };
  ledger: { accounts: number; transactions: number };
  /** Network resource reserve levels, one per reserve (src/treasury/costs/reserve.ts), by network name. */
  reserveLevels: Awaited<ReturnType<typeof reserveLevels>>;
  /** The OPEN divergences of the latest reconciliation run (src/treasury/reconciliation/reconciliation.ts). */
  openDivergences: Awaited<ReturnType<typeof openDivergences>>;
}

/** Every value of the enumeration, with its count (0 when absent), in the enumeration's order. */
function byStatus(values: Record<string, string>, rows: { status: string; _count: { _all: number } }[]): StatusCount[] {
  const counts = new Map(rows.map((r) => [r.status, r._count._all]));
  return Object.values(values).map((status) => ({ status, count: counts.get(status) ?? 0 }));
}

const HOUR_MS = 60 * 60 * 1000;

/**
 * GetPlatformDashboard: a snapshot of the platform for operators, in a handful of grouped queries
 * (one read-only database transaction, so the numbers agree with each other).
 */
export async function platformDashboard(ctx: Context): Promise<PlatformDashboard> {
  const now = ctx.deps.clock.now();
  const db = ctx.deps.db;
  const all = { _count: { _all: true } } as const;
  const pendingStatuses = [WebhookDeliveryStatus.ATTEMPT_PENDING, WebhookDeliveryStatus.AWAITING_RETRY];
  const [
    organizations,
    applications,
    transactions,
    paymentIntents,
    deposits,
    settlements,
    refunds,
    volumes,
    endpoints,
    deliveries,
    failed,
    oldest,
    ledgerAccounts,
    ledgerTransactions,
  ] = await db.$transaction([
    db.organization.count(),
    db.application.count(),
    db.transaction.groupBy({ by: ['status'], ...all, orderBy: { status: 'asc' } }),
    db.paymentIntent.groupBy({ by: ['status'], ...all, orderBy: { status: 'asc' } }),
    db.deposit.groupBy({ by: ['status'], ...all, orderBy: { status: 'asc' } }),
    db.settlement.groupBy({ by: ['status'], ...all, orderBy: { status: 'asc' } }),
    db.refund.groupBy({ by: ['status'], ...all, orderBy: { status: 'asc' } }),
    db.$queryRaw<{ assetNetworkId: string; status: string; count: string; amount: string; funded: string; settled: string; refunded: string }[]>`
        SELECT "assetNetworkId"::text AS "assetNetworkId", "status"::text AS "status", count(*)::text AS "count", sum("amount")::text AS "amount",
               sum("fundedAmount")::text AS "funded", sum("settledAmount")::text AS "settled", sum("refundedAmount")::text AS "refunded"
        FROM "Transaction" GROUP BY "assetNetworkId", "status" ORDER BY "assetNetworkId", "status"`,
    db.webhookEndpoint.groupBy({ by: ['status'], ...all, orderBy: { status: 'asc' } }),
    db.webhookDelivery.groupBy({ by: ['status'], ...all, orderBy: { status: 'asc' } }),
    db.webhookDeliveryAttempt.count({ where: { outcome: { not: 'SUCCESS' }, attemptedAt: { gte: new Date(now.getTime() - HOUR_MS) } } }),
    db.webhookDelivery.aggregate({ where: { status: { in: pendingStatuses } }, _min: { createdAt: true } }),
    db.ledgerAccount.count(),
    db.ledgerTransaction.count(),
  ]);

  const perNetwork = new Map<string, { funded: bigint; settled: bigint; refunded: bigint; byStatus: TransactionVolume['byStatus'] }>();
  for (const v of volumes) {
    const n = perNetwork.get(v.assetNetworkId) ?? { funded: 0n, settled: 0n, refunded: 0n, byStatus: [] };
    n.funded += numericToAmount(v.funded);
    n.settled += numericToAmount(v.settled);
    n.refunded += numericToAmount(v.refunded);
    n.byStatus.push({ status: v.status, count: Number(v.count), amount: amountToString(numericToAmount(v.amount)) });
    perNetwork.set(v.assetNetworkId, n);
  }
  const deliveryCounts = byStatus(WebhookDeliveryStatus, deliveries as never);
  const oldestAt = oldest._min.createdAt;

  return {
    generatedAt: now,
    organizations,
    applications,
    transactions: byStatus(TransactionStatus, transactions as never),
    paymentIntents: byStatus(PaymentIntentStatus, paymentIntents as never),
    deposits: byStatus(DepositStatus, deposits as never),
    settlements: byStatus(SettlementStatus, settlements as never),
    refunds: byStatus(RefundStatus, refunds as never),
    volumes: [...perNetwork].map(([assetNetworkId, n]) => ({
      assetNetworkId,
      funded: amountToString(n.funded),
      settled: amountToString(n.settled),
      refunded: amountToString(n.refunded),
      byStatus: n.byStatus,
    })),
    webhooks: {
      endpoints: byStatus(WebhookEndpointStatus, endpoints as never),
      deliveries: deliveryCounts,
      deadLetterCount: deliveryCounts.find((d) => d.status === WebhookDeliveryStatus.DEAD_LETTER)!.count,
      failedAttemptsLastHour: failed,
      oldestPendingDeliveryAgeSeconds: oldestAt ? Math.max(0, Math.floor((now.getTime() - oldestAt.getTime()) / 1000)) : null,
    },
    ledger: { accounts: ledgerAccounts, transactions: ledgerTransactions },
    reserveLevels: await reserveLevels(db),
    openDivergences: await openDivergences(db),
  };
}
