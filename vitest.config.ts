import { defineConfig } from 'vitest/config';
import { createRequire } from 'node:module';
import LongestFirstSequencer from './test/sequencer';

const require = createRequire(import.meta.url);

export default defineConfig({
  // One graphql module for everybody: without this, vitest loads graphql's ESM build for our
  // code and its CommonJS build through yoga and Pothos ("Cannot use GraphQLSchema from another realm").
  resolve: { alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }] },
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'rest/**/*.test.ts', 'jobs/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    // Longest files first, from test/durations.json on a fresh clone (no vitest cache): no long file
    // starts last and leaves the other worker idle (docs/architecture.md "Tests").
    sequence: { sequencer: LongestFirstSequencer },
  },
});
