import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * `npm run test:durations`: rewrites test/durations.json (seconds per test file, read by
 * test/sequencer.ts to start the longest files first on a fresh clone) from vitest's cache of the
 * last runs (node_modules/.vite/vitest/<project>/results.json). Run it after a full `npm test`; files
 * the cache does not know keep their entry, files that no longer exist are dropped.
 */
const root = join(import.meta.dirname, '..');
const cacheDir = join(root, 'node_modules/.vite/vitest');
const DURATIONS_FILE = join(root, 'test/durations.json');
const table = JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')) as Record<string, number>;
let read = 0;
for (const project of existsSync(cacheDir) ? readdirSync(cacheDir) : []) {
  const file = join(cacheDir, project, 'results.json');
  if (!existsSync(file)) continue;
  const cache = JSON.parse(readFileSync(file, 'utf8')) as { projects?: Record<string, { files?: Record<string, { duration?: number; failed?: boolean }> }> };
  for (const { files = {} } of Object.values(cache.projects ?? {}))
    for (const [path, r] of Object.entries(files))
      if (typeof r.duration === 'number' && !r.failed) {
        table[path] = Math.round(r.duration / 100) / 10;
        read++;
      }
}
const kept = Object.entries(table)
  .filter(([path]) => existsSync(join(root, path)))
  .sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1));
writeFileSync(DURATIONS_FILE, JSON.stringify(Object.fromEntries(kept), null, 2) + '\n');
console.log(`${kept.length} files in test/durations.json (${read} durations read from vitest's cache)`);
