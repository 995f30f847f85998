import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The project's root: the nearest folder above `from` whose package.json is this package's. The
 * same from src/ (run through tsx) and from dist/ (the build, one bundle per entry point), so files
 * read at run time (prisma/migrations, prisma/sql, rest/operations) are found either way.
 */
export function findRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'ftis') return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json of ftis above ${from}`);
  }
}

export const projectRoot = findRoot(import.meta.dirname);
