import { builder, searchArgs, searchConnection, searchConnectionFields, searchSize } from '../builder';
import { policies } from '../auth/policy';
import { getAuditLogEntry, searchAuditLog, type AuditLogEntryView } from './audit-search';
import { searchLedgerEntries, type LedgerEntryView } from './ledger-search';
import { platformDashboard, type PlatformDashboard, type StatusCount, type TransactionVolume } from './dashboard';
import { TOTAL_CAP } from '../kernel/paging';
import { NetworkResourceReserveBalance } from '../treasury/costs/costs.graphql';

/** Operator search and dashboard (docs/admin.md): every field is for platform operators only. */
const operator = policies.operator;

const AuditLogEntry = builder.objectRef<AuditLogEntryView>('AuditLogEntry').implement({
  description: 'AuditLogEntryResponse: one state change, who made it and a summary before and after (never secrets).',
  fields: (t) => ({
    id: t.exposeID('id'),
    occurredAt: t.field({ type: 'DateTime', resolve: (e) => e.occurredAt }),
    organizationId: t.exposeID('organizationId', { nullable: true, description: 'Null for platform-level changes.' }),
    actorType: t.exposeString('actorType', { description: 'MEMBER, API_KEY, ACCOUNT_HOLDER, OPERATOR or SYSTEM (a job).' }),
    actorId: t.exposeID('actorId', { nullable: true }),
    entityType: t.exposeString('entityType'),
    entityId: t.exposeID('entityId'),
    action: t.exposeString('action'),
    requestId: t.exposeString('requestId', { nullable: true }),
    before: t.field({ type: 'JSON', nullable: true, resolve: (e) => e.before ?? null }),
    after: t.field({ type: 'JSON', nullable: true, resolve: (e) => e.after ?? null }),
  }),
});

const AdminLedgerEntry = builder.objectRef<LedgerEntryView>('AdminLedgerEntry').implement({
  description: 'A ledger entry with its ledger transaction (nature, organization, reference) and its account (kind, owner).',
  fields: (t) => ({
    id: t.exposeID('id'),
    ledgerTransactionId: t.exposeID('ledgerTransactionId'),
    nature: t.exposeString('nature'),
    organizationId: t.exposeID('organizationId', { nullable: true }),
    referenceType: t.exposeString('referenceType', { nullable: true }),
    referenceId: t.exposeID('referenceId', { nullable: true }),
    ledgerAccountId: t.exposeID('ledgerAccountId'),
    accountKind: t.exposeString('accountKind', {
      description: 'The LedgerAccountKind of the account: CUSTOMER, ESCROW, SUSPENSE, CHAIN_CLEARING, FEES, PLATFORM_REVENUE, RETAINED.',
    }),
    ownerId: t.exposeID('ownerId', { nullable: true }),
    assetNetworkId: t.exposeID('assetNetworkId'),
    direction: t.exposeString('direction', { description: 'DEBIT or CREDIT.' }),
    amount: t.exposeString('amount', { description: 'A decimal string of integer base units.' }),
    pending: t.exposeBoolean('pending'),
    holdId: t.exposeID('holdId', { nullable: true }),
    accountVersion: t.exposeString('accountVersion', { description: "The account's version this entry produced (a decimal string)." }),
    postedAt: t.field({ type: 'DateTime', description: "The ledger transaction's posting time.", resolve: (e) => e.postedAt }),
    createdAt: t.field({ type: 'DateTime', resolve: (e) => e.createdAt }),
  }),
});

const StatusCountRef = builder.objectRef<StatusCount>('StatusCount').implement({
  description: 'How many records are in one status (every status is listed, 0 included).',
  fields: (t) => ({ status: t.exposeString('status'), count: t.exposeInt('count') }),
});

const TransactionStatusVolume = builder.objectRef<TransactionVolume['byStatus'][number]>('TransactionStatusVolume').implement({
  fields: (t) => ({
    status: t.exposeString('status'),
    count: t.exposeInt('count'),
    amount: t.exposeString('amount', { description: "Sum of the transactions' amounts (decimal string of base units)." }),
  }),
});

const TransactionVolumeRef = builder.objectRef<TransactionVolume>('TransactionVolume').implement({
  description: 'Transaction volumes of one asset-network (decimal strings of base units).',
  fields: (t) => ({
    assetNetworkId: t.exposeID('assetNetworkId'),
    funded: t.exposeString('funded', { description: 'Sum of fundedAmount.' }),
    settled: t.exposeString('settled', { description: 'Sum of settledAmount.' }),
    refunded: t.exposeString('refunded', { description: 'Sum of refundedAmount.' }),
    byStatus: t.field({ type: [TransactionStatusVolume], description: 'Only the statuses that have transactions.', resolve: (v) => v.byStatus }),
  }),
});

const WebhookHealth = builder.objectRef<PlatformDashboard['webhooks']>('PlatformWebhookHealth').implement({
  fields: (t) => ({
    endpoints: t.field({ type: [StatusCountRef], resolve: (w) => w.endpoints }),
    deliveries: t.field({ type: [StatusCountRef], resolve: (w) => w.deliveries }),
    deadLetterCount: t.exposeInt('deadLetterCount'),
    failedAttemptsLastHour: t.exposeInt('failedAttemptsLastHour', { description: 'Delivery attempts without a 2xx answer in the hour before generatedAt.' }),
    oldestPendingDeliveryAgeSeconds: t.exposeInt('oldestPendingDeliveryAgeSeconds', {
      nullable: true,
      description: 'Age of the oldest delivery waiting for an attempt or a retry (null: none).',
    }),
  }),
});

const LedgerCounts = builder.objectRef<PlatformDashboard['ledger']>('PlatformLedgerCounts').implement({
  fields: (t) => ({ accounts: t.exposeInt('accounts'), transactions: t.exposeInt('transactions') }),
});

const DashboardDivergence = builder.objectRef<PlatformDashboard['openDivergences'][number]>('DashboardDivergence').implement({
  description: 'An OPEN divergence of the latest reconciliation run (docs/reconciliation.md); the run itself has the details.',
  fields: (t) => ({
    reconciliationId: t.exposeID('reconciliationId'),
    id: t.exposeID('id'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    kind: t.exposeString('kind', { description: 'BALANCE_MISMATCH, DEPOSIT_NOT_ON_CHAIN or UNCREDITED_TRANSFER.' }),
    difference: t.exposeString('difference', { description: 'observed - expected (base units, decimal string; negative when the chain holds less).' }),
  }),
});

const PlatformDashboardRef = builder.objectRef<PlatformDashboard>('PlatformDashboard').implement({
  description: 'GetPlatformDashboard: a snapshot of the platform, read in one database transaction.',
  fields: (t) => ({
    generatedAt: t.field({ type: 'DateTime', resolve: (d) => d.generatedAt }),
    organizations: t.exposeInt('organizations'),
    applications: t.exposeInt('applications'),
    transactions: t.field({ type: [StatusCountRef], resolve: (d) => d.transactions }),
    paymentIntents: t.field({ type: [StatusCountRef], resolve: (d) => d.paymentIntents }),
    deposits: t.field({ type: [StatusCountRef], resolve: (d) => d.deposits }),
    settlements: t.field({ type: [StatusCountRef], resolve: (d) => d.settlements }),
    refunds: t.field({ type: [StatusCountRef], resolve: (d) => d.refunds }),
    volumes: t.field({ type: [TransactionVolumeRef], description: 'Per asset-network with transactions.', resolve: (d) => d.volumes }),
    webhooks: t.field({ type: WebhookHealth, resolve: (d) => d.webhooks }),
    ledger: t.field({ type: LedgerCounts, resolve: (d) => d.ledger }),
    reserveLevels: t.field({
      type: [NetworkResourceReserveBalance],
      description: 'Network resource reserve levels, one per network with a reserve, by network name (docs/network-costs.md).',
      resolve: (d) => d.reserveLevels,
    }),
    openDivergences: t.field({
      type: [DashboardDivergence],
      description: 'Open divergences of the latest reconciliation run (docs/reconciliation.md).',
      resolve: (d) => d.openDivergences,
    }),
  }),
});

builder.queryFields((t) => ({
  auditLogEntries: t.connection(
    {
      type: AuditLogEntry,
      description: `SearchAuditLog: exact-match filters, newest first (occurredAt, then id); totalCount up to ${TOTAL_CAP}. Platform operators only.`,
      authScopes: { policy: operator },
      ...searchSize,
      args: {
        organizationId: t.arg.id(),
        entityType: t.arg.string(),
        entityId: t.arg.id(),
        actionType: t.arg.string({ description: "Filters the entry's action, e.g. account.frozen." }),
        ...searchArgs,
      },
      resolve: (_p, a, ctx) =>
        searchConnection(a, (paging) =>
          searchAuditLog(ctx, {
            organizationId: a.organizationId == null ? null : String(a.organizationId),
            entityType: a.entityType,
            entityId: a.entityId == null ? null : String(a.entityId),
            actionType: a.actionType,
            ...paging,
          }),
        ),
    },
    searchConnectionFields,
  ),
  auditLogEntry: t.field({
    type: AuditLogEntry,
    description: 'GetAuditLogEntry. Platform operators only.',
    authScopes: { policy: operator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, a, ctx) => getAuditLogEntry(ctx, String(a.id)),
  }),
  ledgerEntries: t.connection(
    {
      type: AdminLedgerEntry,
      description: `SearchLedgerEntriesAdmin: entries of every organization, newest first (postedAt, then entry id); totalCount up to ${TOTAL_CAP}. Platform operators only.`,
      authScopes: { policy: operator },
      ...searchSize,
      args: {
        assetNetworkId: t.arg.id(),
        nature: t.arg.string({ description: "The ledger transaction's nature, exactly (e.g. deposit.confirmed)." }),
        from: t.arg({ type: 'DateTime', description: "On the ledger transaction's postedAt, inclusive." }),
        to: t.arg({ type: 'DateTime', description: "On the ledger transaction's postedAt, exclusive." }),
        ...searchArgs,
      },
      resolve: (_p, a, ctx) =>
        searchConnection(a, (paging) =>
          searchLedgerEntries(ctx, {
            assetNetworkId: a.assetNetworkId == null ? null : String(a.assetNetworkId),
            nature: a.nature,
            from: a.from,
            to: a.to,
            ...paging,
          }),
        ),
    },
    searchConnectionFields,
  ),
  platformDashboard: t.field({
    type: PlatformDashboardRef,
    description: 'GetPlatformDashboard. Platform operators only.',
    authScopes: { policy: operator },
    resolve: (_p, _a, ctx) => platformDashboard(ctx),
  }),
}));
