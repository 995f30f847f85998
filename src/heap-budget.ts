import { totalmem } from 'node:os';
import { getHeapStatistics } from 'node:v8';

/**
 * The process's heap budget by default (issue 22, point 3; docs/deployment.md "Memory"): V8 sizes
 * its heap limit from the machine's memory (4.2 GiB on a 24 GiB machine) and lets the old space grow
 * to several times the live heap (about 110 MiB here) between full collections; pages it frees after
 * such a peak are not given back, so resident memory steps up and stays. A production Node process
 * gets a budget: this is the one `npm start` gives when the operator chose none.
 */
export const DEFAULT_HEAP_BUDGET_MIB = 1024;

const MIB = 2 ** 20;
/** The options that choose V8's heap size, on the command line or in NODE_OPTIONS (V8 accepts `_` for `-`). */
const BUDGET_OPTION = /(^|\s)--max[-_](?:old[-_]space[-_]size(?:[-_]percentage)?|heap[-_]size)(=|\s|$)/;

export interface HeapBudgetInput {
  /** Node's options on the command line (process.execArgv). */
  execArgv: readonly string[];
  /** NODE_OPTIONS. */
  nodeOptions: string | undefined;
  /** The memory limit the process runs under (cgroup; process.constrainedMemory()), 0 or more than the machine's memory when none. */
  constrainedBytes: number;
  /** The machine's memory (os.totalmem()). */
  totalBytes: number;
  /** V8's heap limit as it stands (v8.getHeapStatistics().heap_size_limit): old space plus the young generation. */
  heapLimitBytes: number;
}

/**
 * Whether to restart with `--max-old-space-size=<budget>`, and why not. The operator's choice wins:
 * a budget on the command line or in NODE_OPTIONS, or a memory limit (a container's), from which
 * Node already sizes its heap. A machine whose V8 default is already within the budget keeps it: the
 * budget only lowers the limit.
 */
export function heapBudgetDecision(
  input: HeapBudgetInput,
  budgetMiB = DEFAULT_HEAP_BUDGET_MIB,
): { restart: true; option: string } | { restart: false; reason: 'chosen' | 'memory limit' | 'within budget' } {
  if (input.execArgv.some((a) => BUDGET_OPTION.test(a)) || BUDGET_OPTION.test(input.nodeOptions ?? '')) return { restart: false, reason: 'chosen' };
  if (input.constrainedBytes > 0 && input.constrainedBytes < input.totalBytes) return { restart: false, reason: 'memory limit' };
  // The limit includes the young generation (3 semi-spaces, at most 96 MiB by default beside a 1 GiB budget): a quarter on top.
  if (input.heapLimitBytes <= budgetMiB * 1.25 * MIB) return { restart: false, reason: 'within budget' };
  return { restart: true, option: `--max-old-space-size=${budgetMiB}` };
}

/**
 * Called by src/main.ts before the service's modules load: when the decision says so, the process
 * replaces itself (execve: the same pid, the same stdio, no parent left behind, so signals and
 * kill -9 reach the service as before) with the same command plus the budget. A platform without
 * execve (Windows) keeps V8's default.
 */
export function applyHeapBudget(): void {
  if (typeof process.execve !== 'function') return;
  const decision = heapBudgetDecision({
    execArgv: process.execArgv,
    nodeOptions: process.env.NODE_OPTIONS,
    constrainedBytes: process.constrainedMemory(),
    totalBytes: totalmem(),
    heapLimitBytes: getHeapStatistics().heap_size_limit,
  });
  if (decision.restart) process.execve(process.execPath, [process.execPath, decision.option, ...process.execArgv, ...process.argv.slice(1)]);
}
