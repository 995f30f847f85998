// Runs `prisma generate` (Prisma Client and the Pothos types) with no network: generate never
// executes the schema engine, but the CLI wants its path to exist, so we point it at this file.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const self = fileURLToPath(import.meta.url);
execFileSync('npx', ['prisma', 'generate'], {
  stdio: 'inherit',
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? self, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
});
