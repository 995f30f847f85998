import { builder } from '../builder';
import type { Policy } from '../auth/policy';
import { notFound } from '../errors';
import { assertId } from '../ids';
import { assertOrganization } from '../tenancy/access';
import { balancesOfOwner, type Balance } from './ledger';

/**
 * Balances of an organization's Account (its CUSTOMER ledger accounts): members with account-read
 * of the account's organization, and platform operators. The route GET
 * /v1/accounts/{accountId}/balances (rest/routes.ts) carries the same policy.
 */
export const accountBalancesPolicy: Policy = { member: 'account-read', operator: true };

export const LedgerBalance = builder.objectRef<Balance>('LedgerBalance').implement({
  description: "An account's balance in one asset-network. Amounts are decimal strings of base units.",
  fields: (t) => ({
    assetNetworkId: t.exposeID('assetNetworkId'),
    posted: t.string({ description: 'Posted credits minus posted debits.', resolve: (b) => b.posted.toString() }),
    pendingDebits: t.string({ description: 'Held to leave the account (pending holds debiting it).', resolve: (b) => b.pendingDebits.toString() }),
    pendingCredits: t.string({ description: 'Held to arrive (pending holds crediting it); not available yet.', resolve: (b) => b.pendingCredits.toString() }),
    available: t.string({ description: 'posted minus pendingDebits: what may leave the account now.', resolve: (b) => b.available.toString() }),
    version: t.string({ description: 'Entries posted to the account so far (a decimal string).', resolve: (b) => b.version.toString() }),
    updatedAt: t.field({ type: 'DateTime', nullable: true, resolve: (b) => b.updatedAt }),
  }),
});

builder.queryFields((t) => ({
  accountBalances: t.field({
    type: [LedgerBalance],
    description: "The account's balances, one per asset-network it has ever held (none before its first posting), by asset-network id.",
    authScopes: { policy: accountBalancesPolicy },
    args: { accountId: t.arg.id({ required: true }) },
    resolve: async (_p, args, ctx) => {
      const id = assertId(String(args.accountId), 'Account');
      const account = await ctx.deps.db.account.findUnique({ where: { id }, select: { organizationId: true } });
      if (!account) throw notFound('Account');
      assertOrganization(ctx, account.organizationId, 'Account');
      return balancesOfOwner(ctx.deps.db, 'CUSTOMER', id);
    },
  }),
}));

export const LedgerEntry = builder.prismaObject('LedgerEntry', {
  description: "One entry of the double-entry ledger on an account's ledger account (append-only). Amounts are decimal strings of base units.",
  fields: (t) => ({
    id: t.exposeID('id'),
    ledgerTransactionId: t.exposeID('ledgerTransactionId'),
    assetNetworkId: t.exposeID('assetNetworkId'),
    direction: t.exposeString('direction', { description: 'DEBIT or CREDIT.' }),
    amount: t.string({ select: { amount: true }, resolve: (e) => e.amount.toFixed(0) }),
    pending: t.exposeBoolean('pending', { description: 'An entry of a hold, not posted yet.' }),
    accountVersion: t.string({ select: { accountVersion: true }, resolve: (e) => e.accountVersion.toString() }),
    nature: t.string({
      description: 'What the posting records, e.g. deposit.confirmed.',
      select: { ledgerTransaction: { select: { nature: true } } },
      resolve: (e) => e.ledgerTransaction.nature,
    }),
    createdAt: t.expose('createdAt', { type: 'DateTime' }),
  }),
});
