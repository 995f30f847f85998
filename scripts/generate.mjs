// Runs `prisma generate` (Prisma Client and the Pothos types) with no network: generate never
// executes the schema engine, but the CLI wants its path to exist, so we point it at this file.
// An install without dev dependencies (`npm ci --omit=dev`, production running dist/) has no
// Prisma CLI and needs no generation: the client is compiled into dist/ by `npm run build`.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const self = fileURLToPath(import.meta.url);
if (!existsSync(fileURLToPath(new URL('../node_modules/prisma/package.json', import.meta.url)))) {
  console.log('prisma generate skipped: the prisma CLI is not installed (an install without dev dependencies; dist/ holds the client)');
  process.exit(0);
}
execFileSync('npx', ['prisma', 'generate'], {
  stdio: 'inherit',
  env: { ...process.env, PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? self, PRISMA_HIDE_UPDATE_MESSAGE: '1' },
});
// The operator console's assets (console/build.mjs: esbuild, a dev dependency like the Prisma CLI).
const { buildConsole } = await import('../console/build.mjs');
await buildConsole();
