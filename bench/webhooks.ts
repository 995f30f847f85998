import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Deps } from '../src/context';
import { DELIVER_QUEUE } from '../src/kernel/queues';
import { emitEvent } from '../src/webhooks/outbox';
import { webhookEvent } from '../src/webhooks/events';
import type { ReceiverMessage, ReceiverRequest } from './receivers';

/**
 * The webhook scenario of `npm run bench`: events committed at a steady rate, fanned out to N local
 * receivers, delivered by the service's own job runner (pg-boss worker in this process, as
 * `npm start` runs it).
 *
 * - N receivers (bench/receivers.ts) in a separate process: plain node:http servers on 127.0.0.1
 *   that answer 200 at once and record each X-Webhook-Delivery-Id with its arrival time.
 * - One organization (its own sign-up) with N endpoints, registered through REST.
 * - A producer in this process: a tick every 20 ms starts the events due by then (steady rate,
 *   catching up after a late tick), each in its own transaction through `emitEvent`, at most
 *   `concurrency` in flight; each delivery's commit time is taken when its transaction resolves.
 * - Measured: deliveries received (2xx) per second during the measured window, commit-to-2xx
 *   latency (receiver arrival − commit) of the deliveries committed in the window, the backlog
 *   (committed, not yet received) at the end of the window, and the CPU of each party.
 */
export interface WebhookRunOptions {
  /** Events per second committed (each fans out to every endpoint). */
  rate: number;
  warmupSeconds: number;
  durationSeconds: number;
  /** After the window: how long to wait for the deliveries still in flight (they count in the latency). */
  drainSeconds: number;
  /** Event transactions in flight at once, at most. */
  concurrency: number;
}

export interface WebhookResult {
  name: 'webhooks';
  receivers: number;
  /** Organizations the events are spread over (round robin), each with one endpoint per receiver. */
  organizations: number;
  targetEventsPerSecond: number;
  targetDeliveriesPerSecond: number;
  durationSeconds: number;
  /** Events committed per second during the window (the producer may fall short of the target). */
  eventsPerSecond: number;
  /** Deliveries committed per second during the window (events × endpoints). */
  committedDeliveriesPerSecond: number;
  /** Deliveries received (first arrival, answered 200) during the window, per second. */
  deliveriesPerSecond: number;
  /** Commit → receiver arrival, of the deliveries committed during the window. */
  latencyMs: { p50: number; p90: number; p99: number; max: number; mean: number; count: number };
  /** Deliveries committed by the end of the window and not received by then. */
  backlogAtEnd: number;
  /** Deliveries committed during the window still not received after the drain. */
  undelivered: number;
  /** Repeated arrivals of a delivery id (at-least-once delivery). */
  duplicates: number;
  /** Event transactions: commit duration (start → resolve), failures, and how far behind schedule the producer ended. */
  emit: { p50: number; p99: number; errors: number; behindAtEnd: number };
  /** CPU during the window, in % of one core (the machine has cpus × 100%). */
  /** `others`: the rest of the machine's busy time (processes outside the bench): the shared machine's noise. */
  cpuPercent: { service: number; receivers: number; postgres: number; others: number; machine: number; machineCapacity: number };
  drainSeconds: number;
  /** Delivery jobs still queued or active when the round started (after waiting up to 30 s for the previous round's). */
  jobsAtStart: number;
}

type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; body?: Record<string, any>; text: string }>;

export interface WebhookBench {
  run(opts: WebhookRunOptions): Promise<WebhookResult>;
  close(): Promise<void>;
}

const percentile = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN);
const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** Starts the receivers' process and registers one endpoint per receiver in a new organization. */
export async function startWebhookBench(opts: {
  deps: Deps;
  call: Call;
  receivers: number;
  organizations: number;
  pgPort: number;
  say: (msg: string) => void;
}): Promise<WebhookBench> {
  const { deps, call, say } = opts;
  const child = fork(resolve(import.meta.dirname, 'receivers.ts'), [String(opts.receivers)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const pending: ((m: ReceiverMessage) => void)[] = [];
  const ready = new Promise<string[]>((ok, fail) => {
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`receivers exited with ${code}`)));
    child.on('message', (m: ReceiverMessage) => {
      if (m.type === 'ready') ok(m.urls);
      else pending.shift()?.(m);
    });
  });
  const ask = <T extends ReceiverMessage['type']>(req: ReceiverRequest) =>
    new Promise<Extract<ReceiverMessage, { type: T }>>((ok) => {
      pending.push(ok as (m: ReceiverMessage) => void);
      child.send(req);
    });
  let closed = false;
  const stopChild = async () => {
    if (closed) return;
    closed = true;
    if (child.exitCode === null && child.connected) {
      const exited = new Promise((ok) => child.once('exit', ok));
      child.send({ type: 'close' } satisfies ReceiverRequest);
      await Promise.race([exited, sleep(3000)]);
    }
    if (child.exitCode === null) child.kill();
  };

  // Delivery jobs not yet done, of this round or left by an earlier one.
  const openJobs = async () =>
    (
      await deps.db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state IN ('created', 'retry', 'active')`,
        DELIVER_QUEUE,
      )
    )[0]!.n;

  // Per organization: its member session and endpoints (one per receiver).
  const organizations: { id: string; member: Record<string, string>; endpointIds: string[] }[] = [];
  try {
    const urls = await ready;
    // The bench database is kept between runs: jobs an interrupted run left queued would go first
    // (their receivers are gone, their endpoints deactivated). Nothing else uses this database.
    const stale = await openJobs();
    if (stale) {
      await deps.boss!.deleteQueuedJobs(DELIVER_QUEUE);
      say(`webhooks: ${stale} delivery jobs left by earlier runs; queued ones deleted, ${await openJobs()} still active (they expire)`);
    }
    // Organizations of their own (the REST scenarios' organization gets no endpoints), each with
    // one endpoint per receiver, registered through REST by its member.
    for (let i = 0; i < opts.organizations; i++) {
      const email = `bench.webhooks.${Date.now()}.${i}@example.com`;
      const password = 'correct horse battery staple';
      const signUp = await call('POST', '/v1/auth/signup', { email, password, name: 'Bench webhooks', organizationName: `Bench webhooks ${email}` });
      if (signUp.status !== 201) throw new Error(`signup: ${signUp.status} ${signUp.text}`);
      const login = await call('POST', '/v1/auth/login', { email, password });
      if (login.status !== 200) throw new Error(`login: ${login.status} ${login.text}`);
      const org = { id: signUp.body!.organizationId as string, member: { authorization: `Bearer ${login.body!.accessToken}` }, endpointIds: [] as string[] };
      organizations.push(org);
      for (const url of urls) {
        const r = await call('POST', `/v1/organizations/${org.id}/webhook-endpoints/`, { url }, org.member);
        if (r.status !== 201) throw new Error(`register webhook endpoint ${url}: ${r.status} ${r.text}`);
        org.endpointIds.push(r.body!.id as string);
      }
    }
    say(
      `webhooks: ${organizations.length === 1 ? `organization ${organizations[0]!.id}` : `${organizations.length} organizations`}, ` +
        `${urls.length} endpoints each → receivers process ${child.pid} (${urls.join(', ')})`,
    );
  } catch (e) {
    await stopChild();
    throw e;
  }

  async function run(o: WebhookRunOptions): Promise<WebhookResult> {
    // The previous round's jobs done (recorded and completed) first.
    const waitStart = performance.now();
    let jobsAtStart = await openJobs();
    while (jobsAtStart > 0 && performance.now() - waitStart < 30_000) {
      await sleep(250);
      jobsAtStart = await openJobs();
    }
    await ask<'records'>({ type: 'collect' }); // forget anything left from before
    const commits = new Map<string, number>(); // delivery id → commit time (Date.now())
    const emitMs: number[] = [];
    let errors = 0;
    let started = 0;
    let inFlight = 0;
    let windowStart = Infinity;
    let windowEnd = Infinity;
    const transactions = new Set<Promise<unknown>>();
    const emitOne = () => {
      const t0 = performance.now();
      const organizationId = organizations[started % organizations.length]!.id; // round robin
      const event = webhookEvent('transaction.created', { TransactionId: randomUUID(), ApplicationId: randomUUID(), ParticipantAccountIds: [randomUUID()] });
      inFlight++;
      const p = deps.db
        .$transaction((tx) => emitEvent(tx, deps, organizationId, event))
        .then(
          (r) => {
            const at = Date.now();
            for (const d of r.deliveries) commits.set(d.id, at);
            if (at >= windowStart && at < windowEnd) emitMs.push(performance.now() - t0);
          },
          (err: unknown) => {
            errors++;
            if (errors <= 3) say(`webhooks: event transaction failed: ${String(err)}`);
          },
        )
        .finally(() => {
          inFlight--;
          transactions.delete(p);
          // A slot is free: start the next event now if it is due (not at the next tick).
          if (running) tick();
        });
      transactions.add(p);
    };
    const t0 = performance.now();
    const due = () => Math.floor(((performance.now() - t0) / 1000) * o.rate);
    const tick = () => {
      const target = due();
      while (started < target && inFlight < o.concurrency) {
        started++;
        emitOne();
      }
    };
    let running = true;
    const timer = setInterval(tick, 20);
    tick();

    await sleep(o.warmupSeconds * 1000);
    const cpu0 = cpuSnapshot(child.pid!, opts.pgPort);
    windowStart = Date.now();
    await sleep(o.durationSeconds * 1000);
    windowEnd = Date.now();
    const cpu1 = cpuSnapshot(child.pid!, opts.pgPort);
    const cpu = cpuDelta(cpu0, cpu1);
    const behindAtEnd = due() - started;
    running = false;
    clearInterval(timer);
    await Promise.all([...transactions]);
    const committedTotal = commits.size;

    // Drain: wait for what is still on its way (it counts in the latency; what never comes is reported).
    const drainStart = performance.now();
    while (performance.now() - drainStart < o.drainSeconds * 1000) {
      const { received } = await ask<'count'>({ type: 'count' });
      if (received >= committedTotal) break;
      await sleep(200);
    }
    const drainSeconds = (performance.now() - drainStart) / 1000;
    const { ids, at } = await ask<'records'>({ type: 'collect' });

    const arrival = new Map<string, number>();
    let duplicates = 0;
    for (let i = 0; i < ids.length; i++) {
      if (arrival.has(ids[i]!)) duplicates++;
      else arrival.set(ids[i]!, at[i]!);
    }
    const seconds = (windowEnd - windowStart) / 1000;
    let receivedInWindow = 0;
    for (const t of arrival.values()) if (t >= windowStart && t < windowEnd) receivedInWindow++;
    const latencies: number[] = [];
    let committedInWindow = 0;
    let undelivered = 0;
    let backlogAtEnd = 0;
    for (const [id, c] of commits) {
      const a = arrival.get(id);
      if (c < windowEnd && (a === undefined || a >= windowEnd)) backlogAtEnd++;
      if (c < windowStart || c >= windowEnd) continue;
      committedInWindow++;
      if (a === undefined) undelivered++;
      else latencies.push(a - c);
    }
    latencies.sort((a, b) => a - b);
    emitMs.sort((a, b) => a - b);
    const endpoints = organizations[0]!.endpointIds.length;
    const pct = (micros: number) => +((micros / 1e6 / seconds) * 100).toFixed(0);
    return {
      name: 'webhooks',
      receivers: endpoints,
      organizations: organizations.length,
      targetEventsPerSecond: o.rate,
      targetDeliveriesPerSecond: o.rate * endpoints,
      durationSeconds: +seconds.toFixed(2),
      eventsPerSecond: +(committedInWindow / endpoints / seconds).toFixed(1),
      committedDeliveriesPerSecond: +(committedInWindow / seconds).toFixed(1),
      deliveriesPerSecond: +(receivedInWindow / seconds).toFixed(1),
      latencyMs: {
        p50: percentile(latencies, 50),
        p90: percentile(latencies, 90),
        p99: percentile(latencies, 99),
        max: latencies.at(-1) ?? NaN,
        mean: +(latencies.reduce((s, x) => s + x, 0) / (latencies.length || 1)).toFixed(1),
        count: latencies.length,
      },
      backlogAtEnd,
      undelivered,
      duplicates,
      emit: { p50: +percentile(emitMs, 50).toFixed(1), p99: +percentile(emitMs, 99).toFixed(1), errors, behindAtEnd },
      cpuPercent: {
        service: pct(cpu.service),
        receivers: pct(cpu.receivers),
        postgres: pct(cpu.postgres),
        others: Math.max(0, pct(cpu.machine - cpu.service - cpu.receivers - cpu.postgres)),
        machine: pct(cpu.machine),
        machineCapacity: cpu0.cores * 100,
      },
      drainSeconds: +drainSeconds.toFixed(1),
      jobsAtStart,
    };
  }

  async function close() {
    // Deactivate the endpoints (nothing is left pending for receivers that are gone), then stop the receivers.
    for (const org of organizations)
      for (const id of org.endpointIds) await call('POST', `/v1/webhook-endpoints/${id}/deactivate`, undefined, org.member).catch(() => undefined);
    await stopChild();
  }

  return { run, close };
}

// CPU accounting from /proc (Linux; zeros elsewhere). Times in microseconds.
const TICK_MICROS = 10_000; // CLK_TCK = 100

function procCpuMicros(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MICROS; // utime, stime
  } catch {
    return 0;
  }
}

/** The postmaster listening on `port` and its children (backends, walwriter, ...). */
function postgresPids(port: number): number[] {
  let procs: string[];
  try {
    procs = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  const parentOf = new Map<number, number>();
  let postmaster: number | undefined;
  for (const d of procs) {
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parentOf.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
      if (postmaster === undefined && stat.includes('(postgres)')) {
        const args = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
        const p = args.indexOf('-p');
        if (p >= 0 && args[p + 1] === String(port)) postmaster = Number(d);
      }
    } catch {
      // gone meanwhile
    }
  }
  if (postmaster === undefined) return [];
  return [postmaster, ...[...parentOf].filter(([, ppid]) => ppid === postmaster).map(([pid]) => pid)];
}

/** CPU so far (microseconds) of this process, the receivers' process, PostgreSQL's processes (per pid) and the whole machine. */
function cpuSnapshot(receiversPid: number, pgPort: number) {
  let machineBusy = 0;
  let cores = 0;
  try {
    const lines = readFileSync('/proc/stat', 'utf8').split('\n');
    const total = lines[0]!.split(/\s+/).slice(1).map(Number); // user nice system idle iowait irq softirq steal
    machineBusy = (total[0]! + total[1]! + total[2]! + total[5]! + total[6]! + total[7]!) * TICK_MICROS;
    cores = lines.filter((l) => /^cpu\d/.test(l)).length;
  } catch {
    // not Linux
  }
  const postgres = new Map(postgresPids(pgPort).map((pid) => [pid, procCpuMicros(pid)]));
  return { service: procCpuMicros(process.pid), receivers: procCpuMicros(receiversPid), postgres, machineBusy, cores };
}

/**
 * CPU used between two snapshots. PostgreSQL backends come and go (the pools open and close
 * connections): one that started during the window counts from zero, one that ended during it is
 * lost (its last seconds are then counted under `others`).
 */
function cpuDelta(a: ReturnType<typeof cpuSnapshot>, b: ReturnType<typeof cpuSnapshot>) {
  let postgres = 0;
  for (const [pid, end] of b.postgres) postgres += Math.max(0, end - (a.postgres.get(pid) ?? 0));
  return { service: b.service - a.service, receivers: b.receivers - a.receivers, postgres, machine: b.machineBusy - a.machineBusy };
}
