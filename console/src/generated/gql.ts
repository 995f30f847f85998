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
  '\n  query ConsoleViewer {\n    viewer {\n      id\n      email\n      name\n      role\n      organizationId\n      permissions\n    }\n  }\n': typeof types.ConsoleViewerDocument;
  '\n  query ConsoleOperatorProbe {\n    platformDashboard {\n      generatedAt\n    }\n  }\n': typeof types.ConsoleOperatorProbeDocument;
  '\n  mutation ConsoleLogin($input: LoginInput!) {\n    login(input: $input) {\n      accessToken\n      accessTokenExpiresAt\n      memberId\n      organizationId\n    }\n  }\n': typeof types.ConsoleLoginDocument;
  '\n  subscription ConsoleDeliveryStatus($organizationId: ID, $endpointId: ID) {\n    webhookDeliveryStatus(organizationId: $organizationId, endpointId: $endpointId) {\n      at\n      deliveryId\n      endpointId\n      organizationId\n      eventType\n      kind\n      status\n      attemptCount\n      statusCode\n      outcome\n      nextAttemptAt\n      originalDeliveryId\n    }\n  }\n': typeof types.ConsoleDeliveryStatusDocument;
  '\n  query ConsoleDelivery($id: ID!) {\n    webhookDelivery(id: $id) {\n      id\n      organizationId\n      endpointId\n      eventId\n      eventType\n      environmentType\n      status\n      sequenceNumber\n      attemptCount\n      createdAt\n      lastAttemptAt\n      nextAttemptAt\n      deliveredAt\n      deadLetteredAt\n      cancelledAt\n      originalDeliveryId\n      payload\n      attempts {\n        attemptNumber\n        attemptedAt\n        outcome\n        statusCode\n        latencyMs\n        responseBody\n        error\n        nextAttemptAt\n      }\n    }\n  }\n': typeof types.ConsoleDeliveryDocument;
  '\n  query ConsoleEndpoints($organizationId: ID!, $windowHours: Int) {\n    webhookEndpoints(organizationId: $organizationId) {\n      id\n      url\n      status\n      createdAt\n      health(windowHours: $windowHours) {\n        windowStart\n        attempts\n        successes\n        successRate\n        outcomesPerHour {\n          hour\n          successes\n          failures\n        }\n        deadLetterCount\n        pendingCount\n        lastError\n        lastErrorAt\n        lastSuccessAt\n        nextRetryAt\n      }\n    }\n  }\n': typeof types.ConsoleEndpointsDocument;
  '\n  query ConsoleDeadLetters($organizationId: ID, $endpointId: ID, $eventType: String, $createdAfter: DateTime, $createdBefore: DateTime, $after: String) {\n    webhookDeadLetters(\n      organizationId: $organizationId\n      endpointId: $endpointId\n      eventType: $eventType\n      createdAfter: $createdAfter\n      createdBefore: $createdBefore\n      first: 50\n      after: $after\n    ) {\n      totalCount\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n      edges {\n        node {\n          id\n          organizationId\n          endpointId\n          eventType\n          attemptCount\n          createdAt\n          deadLetteredAt\n        }\n      }\n    }\n  }\n': typeof types.ConsoleDeadLettersDocument;
  '\n  mutation ConsoleRedeliver($id: ID!) {\n    redeliverWebhookDelivery(id: $id) {\n      id\n      status\n      originalDeliveryId\n    }\n  }\n': typeof types.ConsoleRedeliverDocument;
  '\n  mutation ConsoleBulkRedeliver($input: BulkRedeliverWebhookDeliveriesInput!) {\n    bulkRedeliverWebhookDeliveries(input: $input) {\n      id\n      status\n      total\n      redelivered\n    }\n  }\n': typeof types.ConsoleBulkRedeliverDocument;
  '\n  query ConsoleRedeliveryJob($id: ID!) {\n    webhookRedeliveryJob(id: $id) {\n      id\n      status\n      total\n      redelivered\n      error\n      completedAt\n    }\n  }\n': typeof types.ConsoleRedeliveryJobDocument;
  '\n  query ConsoleStuckOperations($olderThanSeconds: Int) {\n    stuckOperations(olderThanSeconds: $olderThanSeconds, limit: 500) {\n      id\n      kind\n      status\n      organizationId\n      networkId\n      ageSeconds\n      since\n      jobState\n      lastError\n    }\n  }\n': typeof types.ConsoleStuckOperationsDocument;
  '\n  query ConsoleDashboard {\n    platformDashboard {\n      generatedAt\n      organizations\n      applications\n      ledger {\n        accounts\n        transactions\n      }\n      transactions {\n        status\n        count\n      }\n      settlements {\n        status\n        count\n      }\n      refunds {\n        status\n        count\n      }\n      deposits {\n        status\n        count\n      }\n      volumes {\n        assetNetworkId\n        funded\n        settled\n        refunded\n      }\n      openDivergences {\n        id\n        assetNetworkId\n        kind\n        difference\n        reconciliationId\n      }\n      reserveLevels {\n        networkId\n        networkName\n        balance\n        lowThreshold\n        targetBalance\n        belowThreshold\n        configured\n      }\n      webhooks {\n        deadLetterCount\n        failedAttemptsLastHour\n        oldestPendingDeliveryAgeSeconds\n        deliveries {\n          status\n          count\n        }\n      }\n    }\n    globalRevenueAccount {\n      assetNetworkId\n      balance\n    }\n  }\n': typeof types.ConsoleDashboardDocument;
};
const documents: Documents = {
  '\n  query ConsoleViewer {\n    viewer {\n      id\n      email\n      name\n      role\n      organizationId\n      permissions\n    }\n  }\n':
    types.ConsoleViewerDocument,
  '\n  query ConsoleOperatorProbe {\n    platformDashboard {\n      generatedAt\n    }\n  }\n': types.ConsoleOperatorProbeDocument,
  '\n  mutation ConsoleLogin($input: LoginInput!) {\n    login(input: $input) {\n      accessToken\n      accessTokenExpiresAt\n      memberId\n      organizationId\n    }\n  }\n':
    types.ConsoleLoginDocument,
  '\n  subscription ConsoleDeliveryStatus($organizationId: ID, $endpointId: ID) {\n    webhookDeliveryStatus(organizationId: $organizationId, endpointId: $endpointId) {\n      at\n      deliveryId\n      endpointId\n      organizationId\n      eventType\n      kind\n      status\n      attemptCount\n      statusCode\n      outcome\n      nextAttemptAt\n      originalDeliveryId\n    }\n  }\n':
    types.ConsoleDeliveryStatusDocument,
  '\n  query ConsoleDelivery($id: ID!) {\n    webhookDelivery(id: $id) {\n      id\n      organizationId\n      endpointId\n      eventId\n      eventType\n      environmentType\n      status\n      sequenceNumber\n      attemptCount\n      createdAt\n      lastAttemptAt\n      nextAttemptAt\n      deliveredAt\n      deadLetteredAt\n      cancelledAt\n      originalDeliveryId\n      payload\n      attempts {\n        attemptNumber\n        attemptedAt\n        outcome\n        statusCode\n        latencyMs\n        responseBody\n        error\n        nextAttemptAt\n      }\n    }\n  }\n':
    types.ConsoleDeliveryDocument,
  '\n  query ConsoleEndpoints($organizationId: ID!, $windowHours: Int) {\n    webhookEndpoints(organizationId: $organizationId) {\n      id\n      url\n      status\n      createdAt\n      health(windowHours: $windowHours) {\n        windowStart\n        attempts\n        successes\n        successRate\n        outcomesPerHour {\n          hour\n          successes\n          failures\n        }\n        deadLetterCount\n        pendingCount\n        lastError\n        lastErrorAt\n        lastSuccessAt\n        nextRetryAt\n      }\n    }\n  }\n':
    types.ConsoleEndpointsDocument,
  '\n  query ConsoleDeadLetters($organizationId: ID, $endpointId: ID, $eventType: String, $createdAfter: DateTime, $createdBefore: DateTime, $after: String) {\n    webhookDeadLetters(\n      organizationId: $organizationId\n      endpointId: $endpointId\n      eventType: $eventType\n      createdAfter: $createdAfter\n      createdBefore: $createdBefore\n      first: 50\n      after: $after\n    ) {\n      totalCount\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n      edges {\n        node {\n          id\n          organizationId\n          endpointId\n          eventType\n          attemptCount\n          createdAt\n          deadLetteredAt\n        }\n      }\n    }\n  }\n':
    types.ConsoleDeadLettersDocument,
  '\n  mutation ConsoleRedeliver($id: ID!) {\n    redeliverWebhookDelivery(id: $id) {\n      id\n      status\n      originalDeliveryId\n    }\n  }\n':
    types.ConsoleRedeliverDocument,
  '\n  mutation ConsoleBulkRedeliver($input: BulkRedeliverWebhookDeliveriesInput!) {\n    bulkRedeliverWebhookDeliveries(input: $input) {\n      id\n      status\n      total\n      redelivered\n    }\n  }\n':
    types.ConsoleBulkRedeliverDocument,
  '\n  query ConsoleRedeliveryJob($id: ID!) {\n    webhookRedeliveryJob(id: $id) {\n      id\n      status\n      total\n      redelivered\n      error\n      completedAt\n    }\n  }\n':
    types.ConsoleRedeliveryJobDocument,
  '\n  query ConsoleStuckOperations($olderThanSeconds: Int) {\n    stuckOperations(olderThanSeconds: $olderThanSeconds, limit: 500) {\n      id\n      kind\n      status\n      organizationId\n      networkId\n      ageSeconds\n      since\n      jobState\n      lastError\n    }\n  }\n':
    types.ConsoleStuckOperationsDocument,
  '\n  query ConsoleDashboard {\n    platformDashboard {\n      generatedAt\n      organizations\n      applications\n      ledger {\n        accounts\n        transactions\n      }\n      transactions {\n        status\n        count\n      }\n      settlements {\n        status\n        count\n      }\n      refunds {\n        status\n        count\n      }\n      deposits {\n        status\n        count\n      }\n      volumes {\n        assetNetworkId\n        funded\n        settled\n        refunded\n      }\n      openDivergences {\n        id\n        assetNetworkId\n        kind\n        difference\n        reconciliationId\n      }\n      reserveLevels {\n        networkId\n        networkName\n        balance\n        lowThreshold\n        targetBalance\n        belowThreshold\n        configured\n      }\n      webhooks {\n        deadLetterCount\n        failedAttemptsLastHour\n        oldestPendingDeliveryAgeSeconds\n        deliveries {\n          status\n          count\n        }\n      }\n    }\n    globalRevenueAccount {\n      assetNetworkId\n      balance\n    }\n  }\n':
    types.ConsoleDashboardDocument,
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
export function graphql(
  source: '\n  query ConsoleViewer {\n    viewer {\n      id\n      email\n      name\n      role\n      organizationId\n      permissions\n    }\n  }\n',
): (typeof documents)['\n  query ConsoleViewer {\n    viewer {\n      id\n      email\n      name\n      role\n      organizationId\n      permissions\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  query ConsoleOperatorProbe {\n    platformDashboard {\n      generatedAt\n    }\n  }\n',
): (typeof documents)['\n  query ConsoleOperatorProbe {\n    platformDashboard {\n      generatedAt\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  mutation ConsoleLogin($input: LoginInput!) {\n    login(input: $input) {\n      accessToken\n      accessTokenExpiresAt\n      memberId\n      organizationId\n    }\n  }\n',
): (typeof documents)['\n  mutation ConsoleLogin($input: LoginInput!) {\n    login(input: $input) {\n      accessToken\n      accessTokenExpiresAt\n      memberId\n      organizationId\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  subscription ConsoleDeliveryStatus($organizationId: ID, $endpointId: ID) {\n    webhookDeliveryStatus(organizationId: $organizationId, endpointId: $endpointId) {\n      at\n      deliveryId\n      endpointId\n      organizationId\n      eventType\n      kind\n      status\n      attemptCount\n      statusCode\n      outcome\n      nextAttemptAt\n      originalDeliveryId\n    }\n  }\n',
): (typeof documents)['\n  subscription ConsoleDeliveryStatus($organizationId: ID, $endpointId: ID) {\n    webhookDeliveryStatus(organizationId: $organizationId, endpointId: $endpointId) {\n      at\n      deliveryId\n      endpointId\n      organizationId\n      eventType\n      kind\n      status\n      attemptCount\n      statusCode\n      outcome\n      nextAttemptAt\n      originalDeliveryId\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  query ConsoleDelivery($id: ID!) {\n    webhookDelivery(id: $id) {\n      id\n      organizationId\n      endpointId\n      eventId\n      eventType\n      environmentType\n      status\n      sequenceNumber\n      attemptCount\n      createdAt\n      lastAttemptAt\n      nextAttemptAt\n      deliveredAt\n      deadLetteredAt\n      cancelledAt\n      originalDeliveryId\n      payload\n      attempts {\n        attemptNumber\n        attemptedAt\n        outcome\n        statusCode\n        latencyMs\n        responseBody\n        error\n        nextAttemptAt\n      }\n    }\n  }\n',
): (typeof documents)['\n  query ConsoleDelivery($id: ID!) {\n    webhookDelivery(id: $id) {\n      id\n      organizationId\n      endpointId\n      eventId\n      eventType\n      environmentType\n      status\n      sequenceNumber\n      attemptCount\n      createdAt\n      lastAttemptAt\n      nextAttemptAt\n      deliveredAt\n      deadLetteredAt\n      cancelledAt\n      originalDeliveryId\n      payload\n      attempts {\n        attemptNumber\n        attemptedAt\n        outcome\n        statusCode\n        latencyMs\n        responseBody\n        error\n        nextAttemptAt\n      }\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  query ConsoleEndpoints($organizationId: ID!, $windowHours: Int) {\n    webhookEndpoints(organizationId: $organizationId) {\n      id\n      url\n      status\n      createdAt\n      health(windowHours: $windowHours) {\n        windowStart\n        attempts\n        successes\n        successRate\n        outcomesPerHour {\n          hour\n          successes\n          failures\n        }\n        deadLetterCount\n        pendingCount\n        lastError\n        lastErrorAt\n        lastSuccessAt\n        nextRetryAt\n      }\n    }\n  }\n',
): (typeof documents)['\n  query ConsoleEndpoints($organizationId: ID!, $windowHours: Int) {\n    webhookEndpoints(organizationId: $organizationId) {\n      id\n      url\n      status\n      createdAt\n      health(windowHours: $windowHours) {\n        windowStart\n        attempts\n        successes\n        successRate\n        outcomesPerHour {\n          hour\n          successes\n          failures\n        }\n        deadLetterCount\n        pendingCount\n        lastError\n        lastErrorAt\n        lastSuccessAt\n        nextRetryAt\n      }\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  query ConsoleDeadLetters($organizationId: ID, $endpointId: ID, $eventType: String, $createdAfter: DateTime, $createdBefore: DateTime, $after: String) {\n    webhookDeadLetters(\n      organizationId: $organizationId\n      endpointId: $endpointId\n      eventType: $eventType\n      createdAfter: $createdAfter\n      createdBefore: $createdBefore\n      first: 50\n      after: $after\n    ) {\n      totalCount\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n      edges {\n        node {\n          id\n          organizationId\n          endpointId\n          eventType\n          attemptCount\n          createdAt\n          deadLetteredAt\n        }\n      }\n    }\n  }\n',
): (typeof documents)['\n  query ConsoleDeadLetters($organizationId: ID, $endpointId: ID, $eventType: String, $createdAfter: DateTime, $createdBefore: DateTime, $after: String) {\n    webhookDeadLetters(\n      organizationId: $organizationId\n      endpointId: $endpointId\n      eventType: $eventType\n      createdAfter: $createdAfter\n      createdBefore: $createdBefore\n      first: 50\n      after: $after\n    ) {\n      totalCount\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n      edges {\n        node {\n          id\n          organizationId\n          endpointId\n          eventType\n          attemptCount\n          createdAt\n          deadLetteredAt\n        }\n      }\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  mutation ConsoleRedeliver($id: ID!) {\n    redeliverWebhookDelivery(id: $id) {\n      id\n      status\n      originalDeliveryId\n    }\n  }\n',
): (typeof documents)['\n  mutation ConsoleRedeliver($id: ID!) {\n    redeliverWebhookDelivery(id: $id) {\n      id\n      status\n      originalDeliveryId\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  mutation ConsoleBulkRedeliver($input: BulkRedeliverWebhookDeliveriesInput!) {\n    bulkRedeliverWebhookDeliveries(input: $input) {\n      id\n      status\n      total\n      redelivered\n    }\n  }\n',
): (typeof documents)['\n  mutation ConsoleBulkRedeliver($input: BulkRedeliverWebhookDeliveriesInput!) {\n    bulkRedeliverWebhookDeliveries(input: $input) {\n      id\n      status\n      total\n      redelivered\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  query ConsoleRedeliveryJob($id: ID!) {\n    webhookRedeliveryJob(id: $id) {\n      id\n      status\n      total\n      redelivered\n      error\n      completedAt\n    }\n  }\n',
): (typeof documents)['\n  query ConsoleRedeliveryJob($id: ID!) {\n    webhookRedeliveryJob(id: $id) {\n      id\n      status\n      total\n      redelivered\n      error\n      completedAt\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  query ConsoleStuckOperations($olderThanSeconds: Int) {\n    stuckOperations(olderThanSeconds: $olderThanSeconds, limit: 500) {\n      id\n      kind\n      status\n      organizationId\n      networkId\n      ageSeconds\n      since\n      jobState\n      lastError\n    }\n  }\n',
): (typeof documents)['\n  query ConsoleStuckOperations($olderThanSeconds: Int) {\n    stuckOperations(olderThanSeconds: $olderThanSeconds, limit: 500) {\n      id\n      kind\n      status\n      organizationId\n      networkId\n      ageSeconds\n      since\n      jobState\n      lastError\n    }\n  }\n'];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(
  source: '\n  query ConsoleDashboard {\n    platformDashboard {\n      generatedAt\n      organizations\n      applications\n      ledger {\n        accounts\n        transactions\n      }\n      transactions {\n        status\n        count\n      }\n      settlements {\n        status\n        count\n      }\n      refunds {\n        status\n        count\n      }\n      deposits {\n        status\n        count\n      }\n      volumes {\n        assetNetworkId\n        funded\n        settled\n        refunded\n      }\n      openDivergences {\n        id\n        assetNetworkId\n        kind\n        difference\n        reconciliationId\n      }\n      reserveLevels {\n        networkId\n        networkName\n        balance\n        lowThreshold\n        targetBalance\n        belowThreshold\n        configured\n      }\n      webhooks {\n        deadLetterCount\n        failedAttemptsLastHour\n        oldestPendingDeliveryAgeSeconds\n        deliveries {\n          status\n          count\n        }\n      }\n    }\n    globalRevenueAccount {\n      assetNetworkId\n      balance\n    }\n  }\n',
): (typeof documents)['\n  query ConsoleDashboard {\n    platformDashboard {\n      generatedAt\n      organizations\n      applications\n      ledger {\n        accounts\n        transactions\n      }\n      transactions {\n        status\n        count\n      }\n      settlements {\n        status\n        count\n      }\n      refunds {\n        status\n        count\n      }\n      deposits {\n        status\n        count\n      }\n      volumes {\n        assetNetworkId\n        funded\n        settled\n        refunded\n      }\n      openDivergences {\n        id\n        assetNetworkId\n        kind\n        difference\n        reconciliationId\n      }\n      reserveLevels {\n        networkId\n        networkName\n        balance\n        lowThreshold\n        targetBalance\n        belowThreshold\n        configured\n      }\n      webhooks {\n        deadLetterCount\n        failedAttemptsLastHour\n        oldestPendingDeliveryAgeSeconds\n        deliveries {\n          status\n          count\n        }\n      }\n    }\n    globalRevenueAccount {\n      assetNetworkId\n      balance\n    }\n  }\n'];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<infer TType, any> ? TType : never;
