import { dashboardOperations } from '../../examples/dashboard/operations';

// The example operations opened in GraphiQL, as one GraphQL document in a string so that the build
// bundles it (no file is read at run time). The dashboard operations of docs/graphql.md come from
// examples/dashboard/operations.ts (the documents `npm run codegen` types).
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

${dashboardOperations.map((o) => o.trim()).join('\n\n')}

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
