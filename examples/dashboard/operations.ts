/**
 * Five dashboard operations (docs/graphql.md, "For dashboard authors"): the documents a dashboard
 * sends to /graphql, written against the checked-in schema.graphql. `npm run codegen` types them
 * (examples/dashboard/generated/: GraphQL Code Generator, client preset), GraphiQL opens with them
 * (src/pages/graphiql-examples.ts), docs/graphql.md shows them, and test/graphql-dashboard.test.ts
 * runs them against the service. Lines of at most 60 characters (GraphiQL's editor width); the
 * comment above each operation is its GraphiQL tab's.
 */

export const organizationOverview = /* GraphQL */ `
# The organization's overview: its applications, members,
# and first accounts and transactions (a member).
query OrganizationOverview($organizationId: ID!) {
  organization(id: $organizationId) {
    id
    name
    applications {
      id
      name
      status
    }
    members {
      id
      email
      role
    }
  }
  accounts(organizationId: $organizationId, limit: 5) {
    items {
      id
      name
      status
    }
    nextCursor
  }
  transactions(organizationId: $organizationId, limit: 5) {
    items {
      id
      status
      amount
    }
    nextCursor
  }
}
`;

export const accountsList = /* GraphQL */ `
# Accounts, 25 a page, with their state (next page:
# nextCursor as $after). A member, or an API key: its mode's
# accounts authorized for its application.
query AccountsList($organizationId: ID!, $after: ID) {
  accounts(
    organizationId: $organizationId
    limit: 25
    after: $after
  ) {
    items {
      id
      name
      reference
      status
      frozenReason
      mode
      accountHolderId
      authorizedApplicationIds
      createdAt
    }
    nextCursor
  }
}
`;

export const accountDetail = /* GraphQL */ `
# One account and its balances, one per asset-network (base
# units, decimal strings), in one request (a member).
query AccountDetail($accountId: ID!) {
  account(id: $accountId) {
    id
    name
    status
    frozenReason
    createdAt
  }
  accountBalances(accountId: $accountId) {
    assetNetworkId
    posted
    available
    pendingDebits
    pendingCredits
  }
}
`;

export const transactionsWithSettlements = /* GraphQL */ `
# Transactions, 25 a page, with their settlements and where
# each settlement's money went (allocations to accounts).
query TransactionsWithSettlements(
  $organizationId: ID!
  $after: ID
) {
  transactions(
    organizationId: $organizationId
    limit: 25
    after: $after
  ) {
    items {
      id
      status
      amount
      escrowAmount
      settledAmount
      refundedAmount
      frozen
      createdAt
      settlements {
        id
        status
        grossAmount
        feeAmount
        executedAt
        failureReason
        allocations {
          accountId
          amount
          status
        }
      }
    }
    nextCursor
  }
}
`;

export const assetCatalog = /* GraphQL */ `
# The enabled asset-networks with their asset and network:
# the currencies a dashboard's filters and amounts need.
query AssetCatalog {
  assetNetworks(status: ENABLED) {
    id
    decimals
    minimumDeposit
    asset {
      code
      name
    }
    network {
      name
      kind
      environmentType
      requiredConfirmations
    }
  }
}
`;

/** The five, in the order docs/graphql.md and GraphiQL show them. */
export const dashboardOperations = [organizationOverview, accountsList, accountDetail, transactionsWithSettlements, assetCatalog];
