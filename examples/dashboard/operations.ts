/**
 * Five dashboard operations (docs/graphql.md, "For dashboard authors"): the documents a dashboard
 * sends to /graphql, written against the checked-in schema.graphql. `npm run codegen` types them
 * (examples/dashboard/generated/: GraphQL Code Generator, client preset), GraphiQL opens with them
 * (src/pages/graphiql-examples.ts), docs/graphql.md shows them, and test/graphql-dashboard.test.ts
 * runs them against the service. Each walks the graph from one organization (relations and keyset
 * connections: `first`/`after`, filters, newest first), in one request. Lines of at most 60
 * characters (GraphiQL's editor width); the comment above each operation is its GraphiQL tab's.
 */

export const organizationOverview = /* GraphQL */ `
# The organization's overview: its applications, members,
# how many accounts it holds, its latest transactions
# (a member).
query OrganizationOverview($organizationId: ID!) {
  organization(id: $organizationId) {
    id
    name
    applications(first: 10) {
      totalCount
      edges {
        node {
          id
          name
          status
        }
      }
    }
    members(first: 10) {
      totalCount
      edges {
        node {
          id
          email
          role
        }
      }
    }
    accounts(first: 5) {
      totalCount
      edges {
        node {
          id
          name
          status
        }
      }
    }
    transactions(first: 5) {
      edges {
        node {
          id
          status
          amount
          createdAt
        }
      }
    }
  }
}
`;

export const frozenAccounts = /* GraphQL */ `
# The organization's frozen accounts with their balances
# and holders, 25 a page (a member). Next page:
# pageInfo.endCursor as $after.
query FrozenAccounts($organizationId: ID!, $after: String) {
  organization(id: $organizationId) {
    accounts(first: 25, after: $after, status: [FROZEN]) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          id
          name
          reference
          frozenReason
          holder {
            id
            name
            email
          }
          balances {
            assetNetworkId
            posted
            available
            pendingDebits
            pendingCredits
          }
        }
      }
    }
  }
}
`;

export const failedSettlements = /* GraphQL */ `
# Today's failed settlements with their transaction and
# payment intent ($since: the start of the day, e.g.
# "2026-11-26T00:00:00Z"). A member.
query FailedSettlements(
  $organizationId: ID!
  $since: DateTime!
) {
  organization(id: $organizationId) {
    settlements(
      first: 50
      status: [FAILED]
      createdAfter: $since
    ) {
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          id
          requestedAmount
          attempts
          failureReason
          failedAt
          transaction {
            id
            status
            amount
            escrowAmount
            frozen
            frozenReason
            paymentIntent {
              id
              reference
              amount
              assetNetworkId
              status
            }
          }
        }
      }
    }
  }
}
`;

export const transactionsWithSettlements = /* GraphQL */ `
# Transactions, 25 a page, newest first, with their
# settlements and the accounts each one paid (allocations).
# Next page: pageInfo.endCursor as $after (a member).
query TransactionsWithSettlements(
  $organizationId: ID!
  $after: String
) {
  organization(id: $organizationId) {
    transactions(first: 25, after: $after) {
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
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
              amount
              status
              account {
                id
                name
              }
            }
          }
        }
      }
    }
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
export const dashboardOperations = [organizationOverview, frozenAccounts, failedSettlements, transactionsWithSettlements, assetCatalog];
