// The example operations opened in GraphiQL, as one GraphQL document in a string so that the build
// bundles it (no file is read at run time).
export const graphiqlExamplesDocument = /* GraphQL */ `# Example operations opened in GraphiQL (development mode), one tab each: the comment above an
# operation opens its tab. Lines of at most 60 characters (the editor's width). A test validates
# every operation against the schema (test/pages.test.ts).

# The member of the access token.
# Headers: "Authorization": "Bearer <accessToken>"
query Me {
  viewer {
    id
    email
    name
    role
    organizationId
    permissions
  }
}

# The organization, its applications and members (a member).
query Organization($organizationId: ID!) {
  organization(id: $organizationId) {
    id
    name
    createdAt
    applications(first: 20) {
      edges { node { id name } }
    }
    members(first: 20) {
      totalCount
      edges { node { id email role } }
    }
  }
}

# Accounts, 20 a page (a member, or an API key: the accounts
# of its mode authorized for its application).
# Next page: nextCursor as $after.
query Accounts($organizationId: ID!, $after: ID) {
  accounts(
    organizationId: $organizationId
    limit: 20
    after: $after
  ) {
    items {
      id
      name
      reference
      status
      mode
      createdAt
    }
    nextCursor
  }
}

# An account's balances, one per asset-network (base units,
# decimal strings): a member or an operator.
query AccountBalances($accountId: ID!) {
  accountBalances(accountId: $accountId) {
    assetNetworkId
    posted
    available
    pendingDebits
    pendingCredits
    updatedAt
  }
}

# Transactions (escrow of payment intents), oldest first.
query Transactions($organizationId: ID!, $after: ID) {
  transactions(
    organizationId: $organizationId
    limit: 20
    after: $after
  ) {
    items {
      id
      status
      amount
      fundedAmount
      escrowAmount
      settledAmount
      refundedAmount
      frozen
      paymentIntentId
      createdAt
    }
    nextCursor
  }
}

# Webhook delivery status, live, as each change commits
# (a member with webhook-endpoint-manage; an operator may
# leave out organizationId: the whole platform).
# GraphiQL subscribes over Server-Sent Events with the
# Headers tab; programs use graphql-ws (docs/webhooks.md).
subscription WebhookDeliveryStatus($organizationId: ID) {
  webhookDeliveryStatus(organizationId: $organizationId) {
    at
    deliveryId
    endpointId
    eventType
    kind
    status
    attemptCount
    statusCode
    outcome
    nextAttemptAt
  }
}
`;
