import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { buildSchema, parse } from 'graphql';
import { printedSchema, schema } from '../src/schema';
import { compileRoutes } from '../rest/adapter';
import { routes } from '../rest/routes';
import { createTestApp, type TestApp } from './harness';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

test('the checked-in schema.graphql is the schema the code builds', () => {
  const file = readFileSync(resolve(import.meta.dirname, '../schema.graphql'), 'utf8');
  expect(file === printedSchema(), 'schema.graphql is stale: run `npm run schema` and commit the result').toBe(true);
  // And it is a valid SDL document in its own right.
  expect(() => buildSchema(file)).not.toThrow();
});

test('every route operation document parses and validates against the schema', () => {
  expect(() => compileRoutes()).not.toThrow();
  const compiled = compileRoutes(schema);
  expect(compiled).toHaveLength(routes.length);
  for (const r of compiled) {
    if (r.operation) {
      expect(r.document, r.operationId).toBeDefined();
      // The document defines the named operation only: nothing unused rides along.
      const doc = parse(readFileSync(resolve(import.meta.dirname, '../rest/operations', `${r.operation}.graphql`), 'utf8'));
      expect(
        doc.definitions.filter((d) => d.kind === 'OperationDefinition'),
        r.operationId,
      ).toHaveLength(1);
      // Every variable the route maps exists in the operation.
      for (const name of Object.keys(r.variables ?? {})) expect(r.variableTypes.has(name), `${r.operationId}: $${name}`).toBe(true);
    } else expect(r.document, r.operationId).toBeUndefined();
  }
});

test('a broken operation document is refused at start-up', () => {
  const broken = buildSchema('type Query { health: String }');
  expect(() => compileRoutes(broken)).toThrow(/route \w+:/);
});
