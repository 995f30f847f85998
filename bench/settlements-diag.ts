import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import type { PrismaClient } from '../src/db/prisma';
import { postgresPids, procCpuMicros } from './ledger';

/**
 * Where a settlements round's execute window goes (BENCH_SETTLEMENTS_DIAG=1; docs/benchmarks.md,
 * "Settlements"): load-independent figures beside the rate.
 * - **Backends:** pg_stat_activity of the bench database sampled every 20 ms: per sample, each
 *   backend's state (active / idle in transaction = waiting for the service / idle), its wait event
 *   (Lock:transactionid and Lock:tuple are row locks, LWLock:WALWrite and IO:WALSync the commit's
 *   flush) and the first words of its statement.
 * - **CPU per settlement:** the bench process's CPU time (it runs the service's workers) and every
 *   PostgreSQL process's (children of the postmaster, from /proc) over the window.
 * - **Groups:** how many jobs each executed group held and how long it took.
 * - **CPU profile** of the bench process over the window (BENCH_SETTLEMENTS_PROFILE=<file>.cpuprofile).
 */
export interface DiagReport {
  samples: number;
  backends: { key: string; share: number }[];
  cpu: { serviceMicrosPerSettlement: number; postgresMicrosPerSettlement: number; windowSeconds: number };
  groups: { count: number; sizes: Record<string, number>; meanSize: number; meanMs: number; maxMs: number };
}

/** CPU time (µs) of the PostgreSQL server listening on `pgPort`: the postmaster and its children. */
const postgresCpuMicros = (pgPort: number) => postgresPids(pgPort).reduce((sum, pid) => sum + procCpuMicros(pid), 0);

export function startDiag(db: PrismaClient, pgPort: number) {
  const counts = new Map<string, number>();
  let samples = 0;
  let stopped = false;
  const groups: { size: number; ms: number }[] = [];
  const cpu0 = process.cpuUsage();
  const pg0 = postgresCpuMicros(pgPort);
  const t0 = performance.now();
  const profileFile = process.env.BENCH_SETTLEMENTS_PROFILE;
  const session = profileFile ? new Session() : null;
  const profiling = session
    ? (async () => {
        session.connect();
        await session.post('Profiler.enable');
        await session.post('Profiler.setSamplingInterval', { interval: 500 });
        await session.post('Profiler.start');
      })()
    : Promise.resolve();
  const sampler = (async () => {
    while (!stopped) {
      const rows = await db.$queryRaw<{ state: string | null; wait: string | null; q: string | null }[]>`
        SELECT "state", coalesce("wait_event_type" || ':' || "wait_event", '') AS "wait",
               left(regexp_replace("query", '[[:space:]]+', ' ', 'g'), 60) AS "q"
          FROM pg_stat_activity
         WHERE "datname" = current_database() AND "pid" <> pg_backend_pid() AND "backend_type" = 'client backend'`;
      samples++;
      for (const r of rows) {
        if (r.state === 'idle') continue;
        const key = `${r.state} ${r.wait}${r.state === 'active' || r.wait ? ` | ${r.q}` : ''}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      await new Promise((ok) => setTimeout(ok, 20));
    }
  })();
  return {
    onGroup: (size: number, ms: number) => groups.push({ size, ms }),
    async stop(settlements: number): Promise<DiagReport> {
      const seconds = (performance.now() - t0) / 1000;
      const c = process.cpuUsage(cpu0);
      const pg1 = postgresCpuMicros(pgPort);
      stopped = true;
      await sampler;
      await profiling;
      if (session && profileFile) {
        const { profile } = await session.post('Profiler.stop');
        writeFileSync(profileFile, JSON.stringify(profile));
        session.disconnect();
      }
      const sizes: Record<string, number> = {};
      for (const g of groups) sizes[g.size] = (sizes[g.size] ?? 0) + 1;
      return {
        samples,
        backends: [...counts]
          .sort((a, b) => b[1] - a[1])
          .slice(0, 25)
          .map(([key, n]) => ({ key, share: +(n / samples).toFixed(2) })),
        cpu: {
          serviceMicrosPerSettlement: Math.round((c.user + c.system) / settlements),
          postgresMicrosPerSettlement: Math.round((pg1 - pg0) / settlements),
          windowSeconds: +seconds.toFixed(2),
        },
        groups: {
          count: groups.length,
          sizes,
          meanSize: groups.length ? +(groups.reduce((s, g) => s + g.size, 0) / groups.length).toFixed(1) : 0,
          meanMs: groups.length ? Math.round(groups.reduce((s, g) => s + g.ms, 0) / groups.length) : 0,
          maxMs: groups.length ? Math.round(Math.max(...groups.map((g) => g.ms))) : 0,
        },
      };
    },
  };
}
