import { readFileSync } from 'node:fs';
import { relative, sep } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The order in which vitest hands test files to its two workers (vitest.config.ts, docs/architecture.md "Tests").
 * Longest first: a long file started last makes a tail during which one worker idles. vitest's own
 * order does this from its cache of the last run's durations, but a fresh clone (CI) has no cache,
 * and vitest then orders by file size, which put several of the longest files (process tests, small
 * files that spawn services) at the very end. Here each file's duration comes from vitest's cache
 * when it has one, else from test/durations.json (seconds per file, from a full run:
 * `npm run test:durations` rewrites it from the cache); a file in neither (a new one) goes first.
 * Files that failed in the cached run go first, as in vitest.
 */
export const DURATIONS_FILE = new URL('./durations.json', import.meta.url);

export default class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const table = JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')) as Record<string, number>;
    const estimate = (spec: TestSpecification) => {
      const cached = this.ctx.cache.getTestSpecificationResult(spec);
      if (cached) return { failed: cached.failed, ms: cached.duration };
      const seconds = table[relative(spec.project.config.root, spec.moduleId).split(sep).join('/')];
      return { failed: false, ms: seconds === undefined ? Number.POSITIVE_INFINITY : seconds * 1000 };
    };
    const known = new Map(files.map((spec) => [spec, estimate(spec)]));
    return [...files].sort((a, b) => {
      const x = known.get(a)!;
      const y = known.get(b)!;
      if (x.failed !== y.failed) return x.failed ? -1 : 1;
      return y.ms === x.ms ? 0 : y.ms > x.ms ? 1 : -1;
    });
  }
}
