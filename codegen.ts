import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * GraphQL Code Generator (`npm run codegen`): typed operations for dashboard authors from the
 * checked-in schema.graphql (no server, no network) and the operations of
 * examples/dashboard/operations.ts, into examples/dashboard/generated/ (checked in;
 * test/codegen.test.ts fails when it is not what this configuration generates, and
 * `npm run typecheck` compiles it with examples/dashboard/client.ts). docs/graphql.md.
 */
const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['examples/dashboard/operations.ts'],
  ignoreNoDocuments: false,
  generates: {
    'examples/dashboard/generated/': {
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        // The custom scalars as JSON carries them; enums as string unions (no runtime code).
        scalars: { DateTime: 'string', JSON: 'unknown' },
        enumsAsTypes: true,
        useTypeImports: true,
        skipTypename: true,
      },
    },
  },
};

export default config;
