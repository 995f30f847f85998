import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { settingNames } from '../src/config';

/** README.md's Settings table names every environment variable any process reads (issue 16). */
const root = new URL('..', import.meta.url).pathname;
const folders = ['src', 'scripts', 'test', 'bench', 'jobs', 'rest'];
/** Not settings of ours: the shell's own, and the receiver example's secret in a doc comment. */
const notSettings = new Set(['PATH', 'HOME', 'FTIS_WEBHOOK_SECRET']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (e.name === 'generated' || e.name === 'node_modules') return [];
    const path = join(dir, e.name);
    return e.isDirectory() ? sources(path) : /\.(ts|mjs)$/.test(e.name) ? [path] : [];
  });
}

test('the Settings table of README.md names every setting of src/config.ts and every variable the code reads', () => {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const table = readme.slice(readme.indexOf('## Settings'), readme.indexOf('\n## ', readme.indexOf('## Settings') + 1));
  const read = new Set<string>();
  for (const file of [...folders.flatMap((f) => sources(join(root, f))), join(root, 'prisma.config.ts')]) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/process\.env(?:\.([A-Z][A-Z0-9_]*)|\[['"]([A-Z][A-Z0-9_]*)['"]\])|\benv\(['"]([A-Z][A-Z0-9_]*)['"]/g))
      read.add((m[1] ?? m[2] ?? m[3])!);
  }
  expect(read.size).toBeGreaterThan(20);
  const named = (name: string) => table.includes('`' + name + '`');
  expect([...read].filter((n) => !notSettings.has(n) && !named(n))).toEqual([]);
  expect(settingNames.filter((n) => !named(n))).toEqual([]);
});
