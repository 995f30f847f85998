import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, runCommand, startService, type ServiceProcess } from './process-harness';

/**
 * The README's first steps, replayed as written: its first `sh` block under "First steps" runs in
 * bash against a real `npm start` (embedded PostgreSQL in a fresh DATA_DIR, its own ports), with
 * `npm run sandbox:seed` reaching that running service's database. Then the start-up failures of
 * issue 16 item 1, each through a real process: the scripts beside a running service, a second
 * service on its data folder, a taken PORT, a taken EMBEDDED_PG_PORT.
 */
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');

function firstStepsBlock(readme: string): string {
  const section = readme.slice(readme.indexOf('## First steps'));
  const block = /```sh\n([\s\S]*?)```/.exec(section.slice(0, section.indexOf('\n## ', 3)));
  if (!block) throw new Error('README.md: no sh block under "## First steps"');
  return block[1]!;
}

let svc: ServiceProcess;
let dataDir: string;
let pgPort: number;
const cleanups: (() => unknown)[] = [];
const scriptEnv = () => ({ DATA_DIR: dataDir, EMBEDDED_PG_PORT: String(pgPort) });
const node = (script: string, ...args: string[]) => ['--import', 'tsx', script, ...args];
const fatalOf = (stdout: string) =>
  stdout
    .split('\n')
    .filter((l) => l.includes('"level":60'))
    .map((l) => JSON.parse(l) as { msg: string });

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'ftis-readme-'));
  chmodSync(dataDir, 0o755); // the postgres OS user (when run as root) traverses it
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  pgPort = await freePort();
  // No keys given: the embedded database's keys are generated under DATA_DIR, which the seed shares.
  svc = await startService({
    env: { HOST: '127.0.0.1', PORT: String(await freePort()), LOG_LEVEL: 'info', SANDBOX_BLOCK_INTERVAL_MS: '1000' },
    embedded: { dataDir, port: pgPort },
    startTimeoutMs: 180_000,
  });
}, 200_000);
afterAll(async () => {
  await svc?.stop();
  for (const c of cleanups.reverse()) await c();
});

describe('README first steps', () => {
  test('the block runs as written against npm start: the payment intent SUCCEEDS, the transaction is RESERVED, the settled balance is posted', async () => {
    const script = join(dataDir, 'first-steps.sh');
    writeFileSync(script, firstStepsBlock(README));
    const r = await runCommand('bash', ['-e', '-o', 'pipefail', script], { ...scriptEnv(), BASE: svc.url }, 240_000);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toMatch(/payment intent [0-9a-f-]{36}: SUCCEEDED/);
    expect(r.stdout).toContain('"status":"RESERVED"');
    expect(r.stdout).toMatch(/"posted":"1500000"/);
    // No secret in the service's log.
    const log = JSON.stringify(svc.logs());
    expect(log).not.toMatch(/sk_test_[0-9A-Za-z]{40}|op_[0-9A-Za-z]{40}/);
  }, 300_000);

  test('sandbox:seed again: the same ids, nothing duplicated; the operator key is not shown again, a new API key is', async () => {
    const seed = async () => {
      const r = await runCommand(process.execPath, node('scripts/sandbox-seed.ts', '--json'), scriptEnv());
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain('using the embedded PostgreSQL of the running service');
      return { out: JSON.parse(r.stdout) as Record<string, string>, stderr: r.stderr };
    };
    const a = await seed();
    const b = await seed();
    const { API_KEY: keyA, API_KEY_ID: keyIdA, ...idsA } = a.out;
    const { API_KEY: keyB, API_KEY_ID: keyIdB, ...idsB } = b.out;
    expect(idsB).toEqual(idsA);
    expect(idsA.OPERATOR_KEY).toBeUndefined(); // created by the README's run
    expect(b.stderr).toContain('its key was shown when it was made');
    expect(keyB).not.toBe(keyA);
    expect(keyIdB).not.toBe(keyIdA);
    // Both keys work; the organization has one account of each seeded name.
    for (const key of [keyA!, keyB!]) {
      const wallet = await svc.rest('GET', `/v1/wallets/${idsA.WALLET_ID}`, { headers: { 'X-Api-Key': key } });
      expect(wallet.status, wallet.text).toBe(200);
    }
    const login = await svc.rest('POST', '/v1/auth/login', { body: { email: idsA.MEMBER_EMAIL, password: idsA.MEMBER_PASSWORD } });
    const accounts = await svc.rest('GET', `/v1/organizations/${idsA.ORG_ID}/accounts?take=100`, {
      headers: { Authorization: `Bearer ${login.body.accessToken}` },
    });
    expect(accounts.status, accounts.text).toBe(200);
    const names = ((accounts.body.items ?? accounts.body) as { name: string }[]).map((x) => x.name);
    expect(names.filter((n) => n === 'Seller')).toHaveLength(1);
    expect(names.filter((n) => n === 'Partner')).toHaveLength(1);
  }, 120_000);
});

describe('start-up failures name their cause (issue 16, item 1)', () => {
  test('operator:create while npm start runs: uses its database; the key works', async () => {
    const r = await runCommand(process.execPath, node('scripts/operator-create.ts', '--email', 'ops-readme@example.com'), scriptEnv());
    expect(r.code, r.stderr).toBe(0);
    const key = /X-Operator-Key: (op_\w+)/.exec(r.stdout)?.[1];
    expect(key).toBeDefined();
    // The key works on the running service, and the audit log holds both operators' creation (this one, the seed's).
    const audit = await svc.rest('GET', '/v1/admin/audit-log?entityType=Operator&take=50', { headers: { 'X-Operator-Key': key! } });
    expect(audit.status, audit.text).toBe(200);
    expect(audit.text.match(/operator\.created/g)?.length).toBeGreaterThanOrEqual(2);
  }, 120_000);

  test('a second npm start on the same DATA_DIR exits 1, naming the data folder in use and the process', async () => {
    const r = await runCommand(process.execPath, node('src/main.ts'), { ...scriptEnv(), HOST: '127.0.0.1', PORT: '0' });
    expect(r.code).toBe(1);
    const [fatal] = fatalOf(r.stdout);
    expect(fatal?.msg).toContain(`is in use: its embedded PostgreSQL is run by process ${svc.nodePid}`);
  }, 120_000);

  test('npm start with PORT taken exits 1, naming the port, before it starts a database', async () => {
    const port = new URL(svc.url).port;
    const other = mkdtempSync(join(tmpdir(), 'ftis-readme-port-'));
    cleanups.push(() => rmSync(other, { recursive: true, force: true }));
    const r = await runCommand(process.execPath, node('src/main.ts'), {
      DATA_DIR: other,
      EMBEDDED_PG_PORT: String(await freePort()),
      HOST: '127.0.0.1',
      PORT: port,
    });
    expect(r.code).toBe(1);
    expect(fatalOf(r.stdout).map((f) => f.msg)).toEqual([
      `PORT ${port} is taken on 127.0.0.1 (another process listens there): stop it, or set PORT to a free port`,
    ]);
  }, 120_000);

  test('a script with EMBEDDED_PG_PORT taken exits 1 with one line naming the port', async () => {
    const other = mkdtempSync(join(tmpdir(), 'ftis-readme-pg-'));
    chmodSync(other, 0o755);
    cleanups.push(() => rmSync(other, { recursive: true, force: true }));
    const r = await runCommand(process.execPath, node('scripts/operator-create.ts', '--email', 'x@example.com'), {
      DATA_DIR: other,
      EMBEDDED_PG_PORT: String(pgPort),
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`operator:create: port ${pgPort} (EMBEDDED_PG_PORT) is taken by another process`);
    expect(r.stderr).not.toContain('triggerUncaughtException');
  }, 180_000);
  test('an invalid setting ends npm start and a script with one line naming the variable, never its value, exit 1', async () => {
    for (const args of [node('src/main.ts'), node('scripts/operator-create.ts', '--email', 'x@example.com')]) {
      const r = await runCommand(process.execPath, args, { ...scriptEnv(), PORT: 'not-a-port-s3cr3t' });
      expect(r.code).toBe(1);
      expect(r.stderr.trim()).toBe('Invalid configuration: PORT: Invalid input: expected number, received NaN');
      expect(r.stdout + r.stderr).not.toContain('s3cr3t');
    }
  }, 120_000);
});
