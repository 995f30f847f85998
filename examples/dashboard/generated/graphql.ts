/* eslint-disable */
/** Internal type. DO NOT USE DIRECTLY. */
type Exact<T extends { [key: string]: unknown }> = { [K in keyof T]: T[K] };
/** Internal type. DO NOT USE DIRECTLY. */
export type Incremental<T> = T | { [P in keyof T]?: P extends ' $fragmentName' | '__typename' ? T[P] : never };
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';
/** ACTIVE -> FROZEN -> ACTIVE (unfreeze); ACTIVE -> CLOSED (terminal). */
export type AccountStatus =
  | 'ACTIVE'
  | 'CLOSED'
  | 'FROZEN';

export type ApplicationStatus =
  | 'ACTIVE'
  | 'ARCHIVED'
  | 'SUSPENDED';

export type EnvironmentType =
  | 'PRODUCTION'
  | 'SANDBOX';

export type MemberRole =
  | 'ADMIN'
  | 'DEVELOPER'
  | 'OPERATIONS'
  | 'OWNER'
  | 'VIEWER';

/** The family of a network: which adapter talks to it. Only SANDBOX networks have an adapter in this version (docs/chains.md). */
export type NetworkKind =
  | 'EVM'
  | 'SANDBOX'
  | 'SOLANA'
  | 'TRON'
  | 'UTXO';

/** RELEASED: credited to its account's balance. RETAINED: held in its own RETAINED ledger account until the cause (retainReason) clears, then RELEASED. */
export type SettlementAllocationStatus =
  | 'RELEASED'
  | 'RETAINED';

/** PENDING -> EXECUTED (one ledger transaction moved gross = fee + portions) or FAILED (a reason; nothing moved); FAILED -> PENDING by AdminRetrySettlement. docs/settlements.md. */
export type SettlementStatus =
  | 'EXECUTED'
  | 'FAILED'
  | 'PENDING';

/** AWAITING_FUNDS -> RESERVED (funded: FUNDED and RESERVED in one step, the funds held in its escrow) -> back to AWAITING_FUNDS only when a reorganization reverses a credit; RESERVED -> SETTLED or REFUNDED once settlements and refunds empty the escrow; AWAITING_FUNDS -> CANCELLED or EXPIRED (terminal). docs/money-in.md, docs/settlements.md. */
export type TransactionStatus =
  | 'AWAITING_FUNDS'
  | 'CANCELLED'
  | 'EXPIRED'
  | 'FUNDED'
  | 'REFUNDED'
  | 'RESERVED'
  | 'SETTLED';

export type OrganizationOverviewQueryVariables = Exact<{
  organizationId: string | number;
}>;


export type OrganizationOverviewQuery = { organization: { id: string, name: string, applications: Array<{ id: string, name: string, status: ApplicationStatus }>, members: Array<{ id: string, email: string, role: MemberRole }> }, accounts: { nextCursor: string | null, items: Array<{ id: string, name: string, status: AccountStatus }> }, transactions: { nextCursor: string | null, items: Array<{ id: string, status: TransactionStatus, amount: string }> } };

export type AccountsListQueryVariables = Exact<{
  organizationId: string | number;
  after?: string | number | null | undefined;
}>;


export type AccountsListQuery = { accounts: { nextCursor: string | null, items: Array<{ id: string, name: string, reference: string | null, status: AccountStatus, frozenReason: string | null, mode: EnvironmentType, accountHolderId: string | null, authorizedApplicationIds: Array<string>, createdAt: string }> } };

export type AccountDetailQueryVariables = Exact<{
  accountId: string | number;
}>;


export type AccountDetailQuery = { account: { id: string, name: string, status: AccountStatus, frozenReason: string | null, createdAt: string }, accountBalances: Array<{ assetNetworkId: string, posted: string, available: string, pendingDebits: string, pendingCredits: string }> };

export type TransactionsWithSettlementsQueryVariables = Exact<{
  organizationId: string | number;
  after?: string | number | null | undefined;
}>;


export type TransactionsWithSettlementsQuery = { transactions: { nextCursor: string | null, items: Array<{ id: string, status: TransactionStatus, amount: string, escrowAmount: string, settledAmount: string, refundedAmount: string, frozen: boolean, createdAt: string, settlements: Array<{ id: string, status: SettlementStatus, grossAmount: string | null, feeAmount: string | null, executedAt: string | null, failureReason: string | null, allocations: Array<{ accountId: string, amount: string, status: SettlementAllocationStatus }> }> }> } };

export type AssetCatalogQueryVariables = Exact<{ [key: string]: never; }>;


export type AssetCatalogQuery = { assetNetworks: Array<{ id: string, decimals: number, minimumDeposit: string, asset: { code: string, name: string }, network: { name: string, kind: NetworkKind, environmentType: EnvironmentType, requiredConfirmations: number } }> };


export const OrganizationOverviewDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"OrganizationOverview"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"organizationId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"organization"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"id"},"value":{"kind":"Variable","name":{"kind":"Name","value":"organizationId"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"applications"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"status"}}]}},{"kind":"Field","name":{"kind":"Name","value":"members"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"email"}},{"kind":"Field","name":{"kind":"Name","value":"role"}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"accounts"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"organizationId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"organizationId"}}},{"kind":"Argument","name":{"kind":"Name","value":"limit"},"value":{"kind":"IntValue","value":"5"}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"items"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"status"}}]}},{"kind":"Field","name":{"kind":"Name","value":"nextCursor"}}]}},{"kind":"Field","name":{"kind":"Name","value":"transactions"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"organizationId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"organizationId"}}},{"kind":"Argument","name":{"kind":"Name","value":"limit"},"value":{"kind":"IntValue","value":"5"}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"items"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"amount"}}]}},{"kind":"Field","name":{"kind":"Name","value":"nextCursor"}}]}}]}}]} as unknown as DocumentNode<OrganizationOverviewQuery, OrganizationOverviewQueryVariables>;
export const AccountsListDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"AccountsList"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"organizationId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"after"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"accounts"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"organizationId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"organizationId"}}},{"kind":"Argument","name":{"kind":"Name","value":"limit"},"value":{"kind":"IntValue","value":"25"}},{"kind":"Argument","name":{"kind":"Name","value":"after"},"value":{"kind":"Variable","name":{"kind":"Name","value":"after"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"items"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"reference"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"frozenReason"}},{"kind":"Field","name":{"kind":"Name","value":"mode"}},{"kind":"Field","name":{"kind":"Name","value":"accountHolderId"}},{"kind":"Field","name":{"kind":"Name","value":"authorizedApplicationIds"}},{"kind":"Field","name":{"kind":"Name","value":"createdAt"}}]}},{"kind":"Field","name":{"kind":"Name","value":"nextCursor"}}]}}]}}]} as unknown as DocumentNode<AccountsListQuery, AccountsListQueryVariables>;
export const AccountDetailDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"AccountDetail"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"accountId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"account"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"id"},"value":{"kind":"Variable","name":{"kind":"Name","value":"accountId"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"frozenReason"}},{"kind":"Field","name":{"kind":"Name","value":"createdAt"}}]}},{"kind":"Field","name":{"kind":"Name","value":"accountBalances"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"accountId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"accountId"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"assetNetworkId"}},{"kind":"Field","name":{"kind":"Name","value":"posted"}},{"kind":"Field","name":{"kind":"Name","value":"available"}},{"kind":"Field","name":{"kind":"Name","value":"pendingDebits"}},{"kind":"Field","name":{"kind":"Name","value":"pendingCredits"}}]}}]}}]} as unknown as DocumentNode<AccountDetailQuery, AccountDetailQueryVariables>;
export const TransactionsWithSettlementsDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"TransactionsWithSettlements"},"variableDefinitions":[{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"organizationId"}},"type":{"kind":"NonNullType","type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}},{"kind":"VariableDefinition","variable":{"kind":"Variable","name":{"kind":"Name","value":"after"}},"type":{"kind":"NamedType","name":{"kind":"Name","value":"ID"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"transactions"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"organizationId"},"value":{"kind":"Variable","name":{"kind":"Name","value":"organizationId"}}},{"kind":"Argument","name":{"kind":"Name","value":"limit"},"value":{"kind":"IntValue","value":"25"}},{"kind":"Argument","name":{"kind":"Name","value":"after"},"value":{"kind":"Variable","name":{"kind":"Name","value":"after"}}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"items"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"amount"}},{"kind":"Field","name":{"kind":"Name","value":"escrowAmount"}},{"kind":"Field","name":{"kind":"Name","value":"settledAmount"}},{"kind":"Field","name":{"kind":"Name","value":"refundedAmount"}},{"kind":"Field","name":{"kind":"Name","value":"frozen"}},{"kind":"Field","name":{"kind":"Name","value":"createdAt"}},{"kind":"Field","name":{"kind":"Name","value":"settlements"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"status"}},{"kind":"Field","name":{"kind":"Name","value":"grossAmount"}},{"kind":"Field","name":{"kind":"Name","value":"feeAmount"}},{"kind":"Field","name":{"kind":"Name","value":"executedAt"}},{"kind":"Field","name":{"kind":"Name","value":"failureReason"}},{"kind":"Field","name":{"kind":"Name","value":"allocations"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"accountId"}},{"kind":"Field","name":{"kind":"Name","value":"amount"}},{"kind":"Field","name":{"kind":"Name","value":"status"}}]}}]}}]}},{"kind":"Field","name":{"kind":"Name","value":"nextCursor"}}]}}]}}]} as unknown as DocumentNode<TransactionsWithSettlementsQuery, TransactionsWithSettlementsQueryVariables>;
export const AssetCatalogDocument = {"kind":"Document","definitions":[{"kind":"OperationDefinition","operation":"query","name":{"kind":"Name","value":"AssetCatalog"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"assetNetworks"},"arguments":[{"kind":"Argument","name":{"kind":"Name","value":"status"},"value":{"kind":"EnumValue","value":"ENABLED"}}],"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"id"}},{"kind":"Field","name":{"kind":"Name","value":"decimals"}},{"kind":"Field","name":{"kind":"Name","value":"minimumDeposit"}},{"kind":"Field","name":{"kind":"Name","value":"asset"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"code"}},{"kind":"Field","name":{"kind":"Name","value":"name"}}]}},{"kind":"Field","name":{"kind":"Name","value":"network"},"selectionSet":{"kind":"SelectionSet","selections":[{"kind":"Field","name":{"kind":"Name","value":"name"}},{"kind":"Field","name":{"kind":"Name","value":"kind"}},{"kind":"Field","name":{"kind":"Name","value":"environmentType"}},{"kind":"Field","name":{"kind":"Name","value":"requiredConfirmations"}}]}}]}}]}}]} as unknown as DocumentNode<AssetCatalogQuery, AssetCatalogQueryVariables>;