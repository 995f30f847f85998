import { builder } from '../builder';
import { policies } from '../auth/policy';
import * as corrections from './corrections';
import type { CorrectionLine } from './corrections';

/** GraphQL of ledger corrections (docs/ledger.md, "Ledger corrections"): AdminRecordLedgerCorrection and the read of one. */

// ------------------------------------------------------------------------------------------------
// Ledger corrections

const LedgerCorrectionAccount = builder.objectRef<CorrectionLine['account']>('LedgerCorrectionAccount').implement({
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'A LedgerAccountKind: CUSTOMER, ESCROW, SUSPENSE, RETAINED or a system kind.' }),
    ownerId: t.exposeID('ownerId', { nullable: true }),
    assetNetworkId: t.exposeID('assetNetworkId'),
  }),
});

const LedgerCorrectionLine = builder.objectRef<CorrectionLine>('LedgerCorrectionLine').implement({
  fields: (t) => ({
    account: t.field({ type: LedgerCorrectionAccount, resolve: (l) => l.account }),
    direction: t.exposeString('direction', { description: 'DEBIT or CREDIT.' }),
    amount: t.exposeString('amount', { description: 'Base units, a decimal string.' }),
  }),
});

export const LedgerCorrection = builder.prismaObject('LedgerCorrection', {
  description: 'A balanced correcting ledger transaction recorded by a platform operator (never an edit of past entries). docs/ledger.md.',
  fields: (t) => ({
    id: t.exposeID('id'),
    organizationId: t.exposeID('organizationId', { nullable: true }),
    reason: t.exposeString('reason'),
    operatorId: t.exposeID('operatorId'),
    ledgerTransactionId: t.exposeID('ledgerTransactionId', { description: 'The correcting ledger transaction (nature ledger.correction).' }),
    correctsLedgerTransactionId: t.exposeID('correctsLedgerTransactionId', { nullable: true }),
    idempotencyKey: t.exposeString('idempotencyKey', { nullable: true }),
    lines: t.field({ type: [LedgerCorrectionLine], resolve: (c) => c.lines as unknown as CorrectionLine[] }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});

const LedgerCorrectionAccountInput = builder.inputType('LedgerCorrectionAccountInput', {
  fields: (t) => ({
    kind: t.string({ required: true, description: 'CUSTOMER, ESCROW, SUSPENSE, RETAINED, CHAIN_CLEARING, FEES or PLATFORM_REVENUE.' }),
    ownerId: t.id({
      description: 'The Account (CUSTOMER), Transaction (ESCROW) or allocation (RETAINED); SUSPENSE: omitted or the organization; system kinds: omitted.',
    }),
    assetNetworkId: t.id({ required: true }),
  }),
});

const LedgerCorrectionLineInput = builder.inputType('LedgerCorrectionLineInput', {
  fields: (t) => ({
    account: t.field({ type: LedgerCorrectionAccountInput, required: true }),
    direction: t.string({ required: true, description: 'DEBIT or CREDIT.' }),
    amount: t.string({ required: true, description: 'Base units > 0, a decimal string.' }),
  }),
});

const RecordLedgerCorrectionInput = builder.inputType('RecordLedgerCorrectionInput', {
  fields: (t) => ({
    reason: t.string({ required: true, description: '1 to 1000 characters.' }),
    organizationId: t.id({ description: 'Required when a line names an organization-owned account (CUSTOMER, ESCROW, SUSPENSE, RETAINED).' }),
    lines: t.field({ type: [LedgerCorrectionLineInput], required: true, description: 'Balanced per asset-network.' }),
    correctsLedgerTransactionId: t.id({ description: 'The ledger transaction it corrects, if one.' }),
    idempotencyKey: t.string({ description: 'Same key and input: the same correction.' }),
  }),
});

builder.queryFields((t) => ({
  ledgerCorrection: t.field({
    type: LedgerCorrection,
    description: 'A ledger correction (operators).',
    authScopes: { policy: policies.operator },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_p, args, ctx) => corrections.loadCorrection(ctx, String(args.id)),
  }),
}));

builder.mutationFields((t) => ({
  adminRecordLedgerCorrection: t.field({
    type: LedgerCorrection,
    description:
      'AdminRecordLedgerCorrection (operators): posts a balanced correcting ledger transaction (nature ledger.correction) with its record and audit entry.',
    authScopes: { policy: policies.operator },
    args: {
      input: t.arg({ type: RecordLedgerCorrectionInput, required: true }),
      idempotencyKey: t.arg.string({ description: 'The Idempotency-Key header; must equal input.idempotencyKey when both are given.' }),
    },
    resolve: (_p, args, ctx) => corrections.recordCorrection(ctx, args.input, args.idempotencyKey),
  }),
}));
