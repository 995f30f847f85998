// Every GraphQL operation the console sends, in one file: GraphQL Code Generator types them from
// schema.graphql into ./generated/ (`npm run codegen:console`, console/codegen.ts). When the schema
// grows (connections, node(id)), only this file and the pages reading it change. Dead letters and
// endpoint health are the server's figures (webhookDeadLetters, WebhookEndpoint.health): the console
// computes nothing from lists of deliveries.
import { graphql } from './generated';

export const ViewerQuery = graphql(`
  query ConsoleViewer {
    viewer {
      id
      email
      name
      role
      organizationId
      permissions
    }
  }
`);

export const OperatorProbeQuery = graphql(`
  query ConsoleOperatorProbe {
    platformDashboard {
      generatedAt
    }
  }
`);

export const LoginMutation = graphql(`
  mutation ConsoleLogin($input: LoginInput!) {
    login(input: $input) {
      accessToken
      accessTokenExpiresAt
      memberId
      organizationId
    }
  }
`);

export const DeliveryStatusSubscription = graphql(`
  subscription ConsoleDeliveryStatus($organizationId: ID, $endpointId: ID) {
    webhookDeliveryStatus(organizationId: $organizationId, endpointId: $endpointId) {
      at
      deliveryId
      endpointId
      organizationId
      eventType
      kind
      status
      attemptCount
      statusCode
      outcome
      nextAttemptAt
      originalDeliveryId
    }
  }
`);

export const DeliveryQuery = graphql(`
  query ConsoleDelivery($id: ID!) {
    webhookDelivery(id: $id) {
      id
      organizationId
      endpointId
      eventId
      eventType
      environmentType
      status
      sequenceNumber
      attemptCount
      createdAt
      lastAttemptAt
      nextAttemptAt
      deliveredAt
      deadLetteredAt
      cancelledAt
      originalDeliveryId
      payload
      attempts {
        attemptNumber
        attemptedAt
        outcome
        statusCode
        latencyMs
        responseBody
        error
        nextAttemptAt
      }
    }
  }
`);

export const EndpointsQuery = graphql(`
  query ConsoleEndpoints($organizationId: ID!, $windowHours: Int) {
    webhookEndpoints(organizationId: $organizationId) {
      id
      url
      status
      createdAt
      health(windowHours: $windowHours) {
        windowStart
        attempts
        successes
        successRate
        outcomesPerHour {
          hour
          successes
          failures
        }
        deadLetterCount
        pendingCount
        lastError
        lastErrorAt
        lastSuccessAt
        nextRetryAt
      }
    }
  }
`);

export const DeadLettersQuery = graphql(`
  query ConsoleDeadLetters($organizationId: ID, $endpointId: ID, $eventType: String, $createdAfter: DateTime, $createdBefore: DateTime, $after: String) {
    webhookDeadLetters(
      organizationId: $organizationId
      endpointId: $endpointId
      eventType: $eventType
      createdAfter: $createdAfter
      createdBefore: $createdBefore
      first: 50
      after: $after
    ) {
      totalCount
      pageInfo {
        hasNextPage
        endCursor
      }
      edges {
        node {
          id
          organizationId
          endpointId
          eventType
          attemptCount
          createdAt
          deadLetteredAt
        }
      }
    }
  }
`);

export const RedeliverMutation = graphql(`
  mutation ConsoleRedeliver($id: ID!) {
    redeliverWebhookDelivery(id: $id) {
      id
      status
      originalDeliveryId
    }
  }
`);

export const BulkRedeliverMutation = graphql(`
  mutation ConsoleBulkRedeliver($input: BulkRedeliverWebhookDeliveriesInput!) {
    bulkRedeliverWebhookDeliveries(input: $input) {
      id
      status
      total
      redelivered
    }
  }
`);

export const RedeliveryJobQuery = graphql(`
  query ConsoleRedeliveryJob($id: ID!) {
    webhookRedeliveryJob(id: $id) {
      id
      status
      total
      redelivered
      error
      completedAt
    }
  }
`);

export const StuckOperationsQuery = graphql(`
  query ConsoleStuckOperations($olderThanSeconds: Int) {
    stuckOperations(olderThanSeconds: $olderThanSeconds, limit: 500) {
      id
      kind
      status
      organizationId
      networkId
      ageSeconds
      since
      jobState
      lastError
    }
  }
`);

export const DashboardQuery = graphql(`
  query ConsoleDashboard {
    platformDashboard {
      generatedAt
      organizations
      applications
      ledger {
        accounts
        transactions
      }
      transactions {
        status
        count
      }
      settlements {
        status
        count
      }
      refunds {
        status
        count
      }
      deposits {
        status
        count
      }
      volumes {
        assetNetworkId
        funded
        settled
        refunded
      }
      openDivergences {
        id
        assetNetworkId
        kind
        difference
        reconciliationId
      }
      reserveLevels {
        networkId
        networkName
        balance
        lowThreshold
        targetBalance
        belowThreshold
        configured
      }
      webhooks {
        deadLetterCount
        failedAttemptsLastHour
        oldestPendingDeliveryAgeSeconds
        deliveries {
          status
          count
        }
      }
    }
    globalRevenueAccount {
      assetNetworkId
      balance
    }
  }
`);
