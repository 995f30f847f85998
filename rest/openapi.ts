import type { GraphQLSchema } from 'graphql';
import type { CompiledRoute } from './adapter';

/** The OpenAPI 3.1 document, generated from the route table and the GraphQL schema. */
export function openApiDocument(routes: CompiledRoute[], _schema: GraphQLSchema): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    (paths[r.path] ??= {})[r.method.toLowerCase()] = { operationId: r.operationId, summary: r.summary, tags: [r.tag], responses: { [r.success.status]: { description: 'Success' } } };
  }
  return { openapi: '3.1.0', info: { title: 'Financial transaction infrastructure API', version: 'v1' }, paths };
}
