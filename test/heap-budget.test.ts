import { describe, expect, test } from 'vitest';
import { readFileSync } from 'node:fs';
import { DEFAULT_HEAP_BUDGET_MIB, heapBudgetDecision } from '../src/heap-budget';
import { cloneTemplateDatabase, serviceEnv, startService, type ServiceProcess } from './process-harness';

/**
 * Issue 22, point 3: `npm start` runs with a heap budget (--max-old-space-size=1024) unless the
 * operator chose one or a memory limit sizes the heap (docs/deployment.md "Memory"). Through the
 * process as `npm start` runs it: its command line (/proc), its heap limit on /metrics, its pid
 * (the restart replaces the process: no wrapper) and its SIGTERM.
 */
const MIB = 2 ** 20;

async function heapLimitOf(svc: ServiceProcess): Promise<number> {
  const r = await svc.rest('GET', '/metrics');
  expect(r.status).toBe(200);
  const m = /^nodejs_heap_size_limit_bytes (\d+)$/m.exec(r.text);
  expect(m, 'nodejs_heap_size_limit_bytes on /metrics').not.toBeNull();
  return Number(m![1]);
}

const commandLineOf = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);

async function runAndStop(name: string, args: string[] | undefined, env: Record<string, string>, check: (svc: ServiceProcess, limit: number) => void) {
  const svc = await startService({ databaseUrl: await cloneTemplateDatabase(`heap_${name}`), env: await serviceEnv({ METRICS: 'on', ...env }), args });
  try {
    // The process the caller started is the service: a restart in place keeps its pid.
    expect(svc.nodePid).toBe(svc.child.pid);
    check(svc, await heapLimitOf(svc));
  } finally {
    expect(await svc.stop()).toEqual({ code: 0, signal: null });
  }
}

describe.concurrent('npm start: the heap budget', () => {
  test('with no budget chosen, the process restarts itself in place with --max-old-space-size=1024 and stops on SIGTERM as before', async () => {
    await runAndStop('default', undefined, {}, (svc, limit) => {
      expect(commandLineOf(svc.nodePid).slice(1, 4)).toEqual([`--max-old-space-size=${DEFAULT_HEAP_BUDGET_MIB}`, '--import', 'tsx']);
      // The limit counts the young generation beside the old space.
      expect(limit).toBeGreaterThanOrEqual(1024 * MIB);
      expect(limit).toBeLessThan(1280 * MIB);
    });
  }, 180_000);

  test("the operator's NODE_OPTIONS wins: no restart, its budget", async () => {
    await runAndStop('env', undefined, { NODE_OPTIONS: '--max-old-space-size=512' }, (svc, limit) => {
      expect(commandLineOf(svc.nodePid).join(' ')).not.toContain('--max-old-space-size');
      expect(limit).toBeGreaterThanOrEqual(512 * MIB);
      expect(limit).toBeLessThan(768 * MIB);
    });
  }, 180_000);

  test('a budget on the command line wins: no restart, its budget', async () => {
    await runAndStop('flag', ['--max-old-space-size=1536', '--import', 'tsx', 'src/main.ts'], {}, (svc, limit) => {
      expect(commandLineOf(svc.nodePid).filter((a) => a.startsWith('--max-old-space-size'))).toEqual(['--max-old-space-size=1536']);
      expect(limit).toBeGreaterThanOrEqual(1536 * MIB);
      expect(limit).toBeLessThan(1792 * MIB);
    });
  }, 180_000);
});

describe('the heap budget decision', () => {
  const machine = { execArgv: ['--import', 'tsx'], nodeOptions: undefined, constrainedBytes: 2 ** 64, totalBytes: 24 * 1024 * MIB, heapLimitBytes: 4288 * MIB };

  test('a large machine without a limit: restart with the budget', () => {
    expect(heapBudgetDecision(machine)).toEqual({ restart: true, option: '--max-old-space-size=1024' });
    expect(heapBudgetDecision({ ...machine, constrainedBytes: 0 })).toEqual({ restart: true, option: '--max-old-space-size=1024' });
  });

  test("the operator's choice, in any of its spellings, wins", () => {
    for (const nodeOptions of ['--max-old-space-size=2048', '--enable-source-maps --max_old_space_size=300', '--max-old-space-size-percentage=25'])
      expect(heapBudgetDecision({ ...machine, nodeOptions })).toEqual({ restart: false, reason: 'chosen' });
    expect(heapBudgetDecision({ ...machine, execArgv: ['--max-old-space-size=4096', '--import', 'tsx'] })).toEqual({ restart: false, reason: 'chosen' });
    expect(heapBudgetDecision({ ...machine, execArgv: ['--max-heap-size=2048'] })).toEqual({ restart: false, reason: 'chosen' });
    // Other options that merely look alike choose nothing.
    expect(heapBudgetDecision({ ...machine, nodeOptions: '--max-semi-space-size=64' }).restart).toBe(true);
  });

  test('a container memory limit: Node sized the heap from it, kept', () => {
    expect(heapBudgetDecision({ ...machine, constrainedBytes: 512 * MIB, heapLimitBytes: 300 * MIB })).toEqual({ restart: false, reason: 'memory limit' });
    expect(heapBudgetDecision({ ...machine, constrainedBytes: 8192 * MIB, heapLimitBytes: 4096 * MIB })).toEqual({ restart: false, reason: 'memory limit' });
  });

  test("a small machine whose default is within the budget keeps V8's default (the budget never raises it)", () => {
    expect(heapBudgetDecision({ ...machine, totalBytes: 2048 * MIB, heapLimitBytes: 1072 * MIB })).toEqual({ restart: false, reason: 'within budget' });
  });
});
