/* eslint-disable */
import * as types from './graphql';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n# The organization's overview: its applications, members,\n# and first accounts and transactions (a member).\nquery OrganizationOverview($organizationId: ID!) {\n  organization(id: $organizationId) {\n    id\n    name\n    applications {\n      id\n      name\n      status\n    }\n    members {\n      id\n      email\n      role\n    }\n  }\n  accounts(organizationId: $organizationId, limit: 5) {\n    items {\n      id\n      name\n      status\n    }\n    nextCursor\n  }\n  transactions(organizationId: $organizationId, limit: 5) {\n    items {\n      id\n      status\n      amount\n    }\n    nextCursor\n  }\n}\n": typeof types.OrganizationOverviewDocument,
    "\n# Accounts, 25 a page, with their state (next page:\n# nextCursor as $after). A member, or an API key: its mode's\n# accounts authorized for its application.\nquery AccountsList($organizationId: ID!, $after: ID) {\n  accounts(\n    organizationId: $organizationId\n    limit: 25\n    after: $after\n  ) {\n    items {\n      id\n      name\n      reference\n      status\n      frozenReason\n      mode\n      accountHolderId\n      authorizedApplicationIds\n      createdAt\n    }\n    nextCursor\n  }\n}\n": typeof types.AccountsListDocument,
    "\n# One account and its balances, one per asset-network (base\n# units, decimal strings), in one request (a member).\nquery AccountDetail($accountId: ID!) {\n  account(id: $accountId) {\n    id\n    name\n    status\n    frozenReason\n    createdAt\n  }\n  accountBalances(accountId: $accountId) {\n    assetNetworkId\n    posted\n    available\n    pendingDebits\n    pendingCredits\n  }\n}\n": typeof types.AccountDetailDocument,
    "\n# Transactions, 25 a page, with their settlements and where\n# each settlement's money went (allocations to accounts).\nquery TransactionsWithSettlements(\n  $organizationId: ID!\n  $after: ID\n) {\n  transactions(\n    organizationId: $organizationId\n    limit: 25\n    after: $after\n  ) {\n    items {\n      id\n      status\n      amount\n      escrowAmount\n      settledAmount\n      refundedAmount\n      frozen\n      createdAt\n      settlements {\n        id\n        status\n        grossAmount\n        feeAmount\n        executedAt\n        failureReason\n        allocations {\n          accountId\n          amount\n          status\n        }\n      }\n    }\n    nextCursor\n  }\n}\n": typeof types.TransactionsWithSettlementsDocument,
    "\n# The enabled asset-networks with their asset and network:\n# the currencies a dashboard's filters and amounts need.\nquery AssetCatalog {\n  assetNetworks(status: ENABLED) {\n    id\n    decimals\n    minimumDeposit\n    asset {\n      code\n      name\n    }\n    network {\n      name\n      kind\n      environmentType\n      requiredConfirmations\n    }\n  }\n}\n": typeof types.AssetCatalogDocument,
};
const documents: Documents = {
    "\n# The organization's overview: its applications, members,\n# and first accounts and transactions (a member).\nquery OrganizationOverview($organizationId: ID!) {\n  organization(id: $organizationId) {\n    id\n    name\n    applications {\n      id\n      name\n      status\n    }\n    members {\n      id\n      email\n      role\n    }\n  }\n  accounts(organizationId: $organizationId, limit: 5) {\n    items {\n      id\n      name\n      status\n    }\n    nextCursor\n  }\n  transactions(organizationId: $organizationId, limit: 5) {\n    items {\n      id\n      status\n      amount\n    }\n    nextCursor\n  }\n}\n": types.OrganizationOverviewDocument,
    "\n# Accounts, 25 a page, with their state (next page:\n# nextCursor as $after). A member, or an API key: its mode's\n# accounts authorized for its application.\nquery AccountsList($organizationId: ID!, $after: ID) {\n  accounts(\n    organizationId: $organizationId\n    limit: 25\n    after: $after\n  ) {\n    items {\n      id\n      name\n      reference\n      status\n      frozenReason\n      mode\n      accountHolderId\n      authorizedApplicationIds\n      createdAt\n    }\n    nextCursor\n  }\n}\n": types.AccountsListDocument,
    "\n# One account and its balances, one per asset-network (base\n# units, decimal strings), in one request (a member).\nquery AccountDetail($accountId: ID!) {\n  account(id: $accountId) {\n    id\n    name\n    status\n    frozenReason\n    createdAt\n  }\n  accountBalances(accountId: $accountId) {\n    assetNetworkId\n    posted\n    available\n    pendingDebits\n    pendingCredits\n  }\n}\n": types.AccountDetailDocument,
    "\n# Transactions, 25 a page, with their settlements and where\n# each settlement's money went (allocations to accounts).\nquery TransactionsWithSettlements(\n  $organizationId: ID!\n  $after: ID\n) {\n  transactions(\n    organizationId: $organizationId\n    limit: 25\n    after: $after\n  ) {\n    items {\n      id\n      status\n      amount\n      escrowAmount\n      settledAmount\n      refundedAmount\n      frozen\n      createdAt\n      settlements {\n        id\n        status\n        grossAmount\n        feeAmount\n        executedAt\n        failureReason\n        allocations {\n          accountId\n          amount\n          status\n        }\n      }\n    }\n    nextCursor\n  }\n}\n": types.TransactionsWithSettlementsDocument,
    "\n# The enabled asset-networks with their asset and network:\n# the currencies a dashboard's filters and amounts need.\nquery AssetCatalog {\n  assetNetworks(status: ENABLED) {\n    id\n    decimals\n    minimumDeposit\n    asset {\n      code\n      name\n    }\n    network {\n      name\n      kind\n      environmentType\n      requiredConfirmations\n    }\n  }\n}\n": types.AssetCatalogDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n# The organization's overview: its applications, members,\n# and first accounts and transactions (a member).\nquery OrganizationOverview($organizationId: ID!) {\n  organization(id: $organizationId) {\n    id\n    name\n    applications {\n      id\n      name\n      status\n    }\n    members {\n      id\n      email\n      role\n    }\n  }\n  accounts(organizationId: $organizationId, limit: 5) {\n    items {\n      id\n      name\n      status\n    }\n    nextCursor\n  }\n  transactions(organizationId: $organizationId, limit: 5) {\n    items {\n      id\n      status\n      amount\n    }\n    nextCursor\n  }\n}\n"): (typeof documents)["\n# The organization's overview: its applications, members,\n# and first accounts and transactions (a member).\nquery OrganizationOverview($organizationId: ID!) {\n  organization(id: $organizationId) {\n    id\n    name\n    applications {\n      id\n      name\n      status\n    }\n    members {\n      id\n      email\n      role\n    }\n  }\n  accounts(organizationId: $organizationId, limit: 5) {\n    items {\n      id\n      name\n      status\n    }\n    nextCursor\n  }\n  transactions(organizationId: $organizationId, limit: 5) {\n    items {\n      id\n      status\n      amount\n    }\n    nextCursor\n  }\n}\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n# Accounts, 25 a page, with their state (next page:\n# nextCursor as $after). A member, or an API key: its mode's\n# accounts authorized for its application.\nquery AccountsList($organizationId: ID!, $after: ID) {\n  accounts(\n    organizationId: $organizationId\n    limit: 25\n    after: $after\n  ) {\n    items {\n      id\n      name\n      reference\n      status\n      frozenReason\n      mode\n      accountHolderId\n      authorizedApplicationIds\n      createdAt\n    }\n    nextCursor\n  }\n}\n"): (typeof documents)["\n# Accounts, 25 a page, with their state (next page:\n# nextCursor as $after). A member, or an API key: its mode's\n# accounts authorized for its application.\nquery AccountsList($organizationId: ID!, $after: ID) {\n  accounts(\n    organizationId: $organizationId\n    limit: 25\n    after: $after\n  ) {\n    items {\n      id\n      name\n      reference\n      status\n      frozenReason\n      mode\n      accountHolderId\n      authorizedApplicationIds\n      createdAt\n    }\n    nextCursor\n  }\n}\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n# One account and its balances, one per asset-network (base\n# units, decimal strings), in one request (a member).\nquery AccountDetail($accountId: ID!) {\n  account(id: $accountId) {\n    id\n    name\n    status\n    frozenReason\n    createdAt\n  }\n  accountBalances(accountId: $accountId) {\n    assetNetworkId\n    posted\n    available\n    pendingDebits\n    pendingCredits\n  }\n}\n"): (typeof documents)["\n# One account and its balances, one per asset-network (base\n# units, decimal strings), in one request (a member).\nquery AccountDetail($accountId: ID!) {\n  account(id: $accountId) {\n    id\n    name\n    status\n    frozenReason\n    createdAt\n  }\n  accountBalances(accountId: $accountId) {\n    assetNetworkId\n    posted\n    available\n    pendingDebits\n    pendingCredits\n  }\n}\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n# Transactions, 25 a page, with their settlements and where\n# each settlement's money went (allocations to accounts).\nquery TransactionsWithSettlements(\n  $organizationId: ID!\n  $after: ID\n) {\n  transactions(\n    organizationId: $organizationId\n    limit: 25\n    after: $after\n  ) {\n    items {\n      id\n      status\n      amount\n      escrowAmount\n      settledAmount\n      refundedAmount\n      frozen\n      createdAt\n      settlements {\n        id\n        status\n        grossAmount\n        feeAmount\n        executedAt\n        failureReason\n        allocations {\n          accountId\n          amount\n          status\n        }\n      }\n    }\n    nextCursor\n  }\n}\n"): (typeof documents)["\n# Transactions, 25 a page, with their settlements and where\n# each settlement's money went (allocations to accounts).\nquery TransactionsWithSettlements(\n  $organizationId: ID!\n  $after: ID\n) {\n  transactions(\n    organizationId: $organizationId\n    limit: 25\n    after: $after\n  ) {\n    items {\n      id\n      status\n      amount\n      escrowAmount\n      settledAmount\n      refundedAmount\n      frozen\n      createdAt\n      settlements {\n        id\n        status\n        grossAmount\n        feeAmount\n        executedAt\n        failureReason\n        allocations {\n          accountId\n          amount\n          status\n        }\n      }\n    }\n    nextCursor\n  }\n}\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n# The enabled asset-networks with their asset and network:\n# the currencies a dashboard's filters and amounts need.\nquery AssetCatalog {\n  assetNetworks(status: ENABLED) {\n    id\n    decimals\n    minimumDeposit\n    asset {\n      code\n      name\n    }\n    network {\n      name\n      kind\n      environmentType\n      requiredConfirmations\n    }\n  }\n}\n"): (typeof documents)["\n# The enabled asset-networks with their asset and network:\n# the currencies a dashboard's filters and amounts need.\nquery AssetCatalog {\n  assetNetworks(status: ENABLED) {\n    id\n    decimals\n    minimumDeposit\n    asset {\n      code\n      name\n    }\n    network {\n      name\n      kind\n      environmentType\n      requiredConfirmations\n    }\n  }\n}\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;