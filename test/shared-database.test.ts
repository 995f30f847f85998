import { afterAll, describe, expect, test } from 'vitest';
import { createPrisma, type PrismaClient } from '../src/db/prisma';
import { setupSandboxCatalog } from './money-helpers';
import { cloneTemplateDatabase, serviceEnv, startService, type ServiceProcess } from './process-harness';

/**
 * Several `npm start` processes on one DATABASE_URL (issue 24): they must agree on keys and on the
 * sandbox chain's cadence.
 */
const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function database(prefix: string): Promise<{ url: string; db: PrismaClient }> {
  const url = await cloneTemplateDatabase(prefix);
  const db = createPrisma(url, 2);
  cleanups.push(() => db.$disconnect());
  return { url, db };
}

describe('keys: with DATABASE_URL, no process generates its own', () => {
  test('a process without JWT_PRIVATE_JWK and WEBHOOK_SECRET_KEY refuses to start, naming each; with one of them, names the other', async () => {
    const { url } = await database('keys');
    const { JWT_PRIVATE_JWK: _j, WEBHOOK_SECRET_KEY: _w, ...noKeys } = await serviceEnv();
    const { WEBHOOK_SECRET_KEY: _w2, ...jwtOnly } = await serviceEnv();
    // Both refused starts at once: neither touches the database.
    const refused = (env: Record<string, string>) =>
      startService({ databaseUrl: url, env }).then(
        (s) => (cleanups.push(() => s.stop()), null),
        (e: Error) => e,
      );
    const [first, second] = await Promise.all([refused(noKeys), refused(jwtOnly)]);
    expect(first?.message).toMatch(/exited \(1\)/);
    const fatal = JSON.parse(first!.message.split('\n').find((l) => l.includes('"level":60'))!) as { msg: string; missing: string[] };
    expect(fatal.missing).toEqual(['JWT_PRIVATE_JWK', 'WEBHOOK_SECRET_KEY']);
    expect(fatal.msg).toMatch(
      /^DATABASE_URL is set: every process of one database must share its keys; refusing to start without: JWT_PRIVATE_JWK .*; WEBHOOK_SECRET_KEY /,
    );
    expect(first!.message).not.toMatch(/database ready/);

    const fatal2 = JSON.parse(second!.message.split('\n').find((l) => l.includes('"level":60'))!) as { missing: string[] };
    expect(fatal2.missing).toEqual(['WEBHOOK_SECRET_KEY']);
  }, 60_000);
});

// The two measurements run side by side (30 s, not 60, of the suite's time); each has its own database.
describe.concurrent('the sandbox chain keeps its cadence', () => {
  const INTERVAL = 1000;
  const WINDOW = 30_000;

  /** Blocks of `networkId` mined during WINDOW after a warm-up, their count and the smallest gap between two. */
  async function measure(db: PrismaClient, networkId: string) {
    await new Promise((r) => setTimeout(r, 2 * INTERVAL)); // warm-up: the producers are running
    const from = new Date();
    await new Promise((r) => setTimeout(r, WINDOW));
    const to = new Date();
    const blocks = await db.sandboxBlock.findMany({
      where: { networkId, minedAt: { gte: from, lt: to } },
      orderBy: { height: 'asc' },
      select: { height: true, minedAt: true },
    });
    const gaps = blocks.slice(1).map((b, i) => b.minedAt.getTime() - blocks[i]!.minedAt.getTime());
    return { count: blocks.length, minGap: Math.min(...gaps), heights: blocks.map((b) => b.height) };
  }

  for (const processes of [1, 2]) {
    test(`${processes} process${processes > 1 ? 'es' : ''}, SANDBOX_BLOCK_INTERVAL_MS=${INTERVAL}: ${WINDOW / INTERVAL} blocks ±10% in ${WINDOW / 1000} s, never two in one interval`, async () => {
      const { url, db } = await database(`cadence${processes}`);
      const env = await serviceEnv({ SANDBOX_BLOCK_INTERVAL_MS: String(INTERVAL) });
      const svcs: ServiceProcess[] = [];
      for (let i = 0; i < processes; i++) {
        const s = await startService({ databaseUrl: url, env });
        cleanups.push(() => s.stop());
        svcs.push(s);
      }
      const catalog = await setupSandboxCatalog({ rest: svcs[0]!.rest, deps: { db } });
      const m = await measure(db, catalog.networkId);
      const expected = WINDOW / INTERVAL;
      expect(m.count, JSON.stringify(m)).toBeGreaterThanOrEqual(expected * 0.9);
      expect(m.count, JSON.stringify(m)).toBeLessThanOrEqual(expected * 1.1);
      // Never two at once: heights consecutive, no two blocks closer than most of an interval.
      expect(m.heights).toEqual(m.heights.map((_, i) => m.heights[0]! + i));
      expect(m.minGap, JSON.stringify(m)).toBeGreaterThanOrEqual(INTERVAL * 0.5);
      for (const s of svcs) await s.stop();
    }, 90_000);
  }
});
