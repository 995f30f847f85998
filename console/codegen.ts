import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * GraphQL Code Generator for the operator console (`npm run codegen:console`): the typed operations
 * of console/src/operations.ts from the checked-in schema.graphql (no server, no network), into
 * console/src/generated/ (checked in; test/console.test.ts fails when it is stale). Kept apart from
 * the root codegen.ts of the dashboard examples; the same packages and versions.
 */
const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['console/src/operations.ts'],
  ignoreNoDocuments: false,
  generates: {
    'console/src/generated/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        scalars: { DateTime: 'string', JSON: 'unknown' },
        enumsAsTypes: true,
        useTypeImports: true,
        skipTypename: true,
        onlyOperationTypes: true,
      },
    },
  },
};

export default config;
