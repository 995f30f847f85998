import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { Deps } from '../src/context';
import { newOperatorKey } from '../src/auth/secrets';
import { ledgerAccounts, postLedgerTransaction } from '../src/ledger/ledger';

/**
 * What the money scenarios of the bench share: the REST call type, the checked-call helpers, a worker
 * pool, and the setup every one starts from (a platform operator, a sandbox catalog entry and an
 * integrator with a sandbox API key), all through the public REST surface as an integrator would.
 */
export type Call = (
  method: string,
  path: string,
  body?: unknown,
  headers?: Record<string, string>,
) => Promise<{ status: number; headers: CallHeaders; body?: Record<string, any>; text: string }>;

/** An answer's headers: what the scenarios read of them. */
export type CallHeaders = Pick<Headers, 'get'>;

/** How many requests were answered 503 (overloaded, nothing changed: issue 22) and retried by callerOf. */
export const overload = { retries: 0 };

/**
 * The bench's HTTP client (issue 22, session 9): `http` (the default), Node's own HTTP client on a
 * keep-alive Agent; `fetch`, the global fetch (undici's WHATWG fetch) the scenarios used before. Both
 * are the load generator's cost, not the product's: in the scenarios that call the service from its
 * own process (deposits, payment intents, settlements, withdrawals) they share its event loop, and
 * fetch's Request/Response/stream objects cost about twice Node's client per request (measured:
 * docs/benchmarks.md, "Deposits end to end", session 9). BENCH_HTTP_CLIENT=fetch measures the old way.
 */
const httpClient = process.env.BENCH_HTTP_CLIENT === 'fetch' ? 'fetch' : 'http';

type Answer = { status: number; headers: CallHeaders; text: string };

/** One request through the global fetch. */
async function fetchOnce(url: URL, method: string, headers: Record<string, string>, body: string | undefined): Promise<Answer> {
  const res = await fetch(url, { method, headers, body });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** A header of Node's answer as Headers.get gives it (several values joined with ", "). */
const headerOf = (headers: IncomingHttpHeaders) => ({
  get: (name: string) => {
    const v = headers[name.toLowerCase()];
    return v === undefined ? null : Array.isArray(v) ? v.join(', ') : v;
  },
});

/** One request through Node's HTTP client, its connections kept alive (as fetch's are) and reused. */
function httpOnce(agent: Agent, url: URL, method: string, headers: Record<string, string>, body: string | undefined): Promise<Answer> {
  return new Promise((ok, fail) => {
    const req = httpRequest(
      url,
      { method, agent, headers: body !== undefined ? { ...headers, 'content-length': Buffer.byteLength(body) } : headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', fail);
        res.on('end', () => ok({ status: res.statusCode!, headers: headerOf(res.headers), text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', fail);
    req.end(body);
  });
}

/** A Call through one request function (JSON bodies), as a well-behaved client: a 503 is retried after its Retry-After, up to 10 times (counted in `overload.retries`). */
function callerThrough(base: string, once: (url: URL, method: string, headers: Record<string, string>, body: string | undefined) => Promise<Answer>): Call {
  return async (method, path, body, headers = {}) => {
    const text = body !== undefined ? JSON.stringify(body) : undefined;
    const h = text !== undefined ? { 'content-type': 'application/json', ...headers } : headers;
    let res: Answer;
    for (let attempt = 1; ; attempt++) {
      res = await once(new URL(path, base), method, h, text);
      if (res.status !== 503 || attempt >= 10) break;
      overload.retries++;
      await new Promise((ok) => setTimeout(ok, Number(res.headers.get('retry-after') ?? 1) * 1000));
    }
    return { status: res.status, headers: res.headers, body: res.text ? (JSON.parse(res.text) as Record<string, any>) : undefined, text: res.text };
  };
}

/** A Call on Node's HTTP client with a keep-alive Agent of its own. */
export function httpCallerOf(base: string): Call {
  const agent = new Agent({ keepAlive: true, scheduling: 'lifo' });
  return callerThrough(base, (url, method, headers, body) => httpOnce(agent, url, method, headers, body));
}

/** A Call on the global fetch (the bench's client before issue 22's session 9). */
export const fetchCallerOf = (base: string): Call => callerThrough(base, fetchOnce);

/** A Call against the service at `base` on the bench's HTTP client (BENCH_HTTP_CLIENT). */
export const callerOf = (base: string): Call => (httpClient === 'fetch' ? fetchCallerOf(base) : httpCallerOf(base));

export const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
export const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** Runs `task(i)` for i in [0, n) with at most `concurrency` in flight. */
export async function pool(n: number, concurrency: number, task: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

/** A call's answer must have `status`; throws naming the scenario and the step otherwise. */
export const expectStatus =
  (scenario: string) =>
  <R extends { status: number; text: string }>(r: R, status: number, what: string): R => {
    if (r.status !== status) throw new Error(`${scenario} bench, ${what}: expected ${status}, got ${r.status} ${r.text}`);
    return r;
  };
export const idOf = (r: { headers: CallHeaders }) => r.headers.get('location')!.split('/').pop()!;

/** A money scenario: one measured round per `run()`, and the checks after all rounds (a description, or throws). */
export interface ScenarioBench<Round> {
  run(): Promise<Round>;
  verify(): Promise<string>;
}
/** A scenario's checks as a target's outcome: ok with their description, or the error. */
export const checkOf = (bench: { verify(): Promise<string> }): Promise<{ ok: boolean; detail: string }> =>
  bench.verify().then(
    (detail) => ({ ok: true, detail }),
    (e: unknown) => ({ ok: false, detail: String(e) }),
  );

/** The middle value (the lower of the two middles for an even count): rounds are reported by their median. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]!;

/** A text table, starting with a newline: the first column left-aligned, the others right-aligned, a rule under the header. */
export function textTable(rows: string[][]): string {
  const widths = rows[0]!.map((_c, i) => Math.max(...rows.map((row) => row[i]!.length)));
  const line = (row: string[]) => row.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return '\n' + line(rows[0]!) + '\n' + widths.map((w) => '-'.repeat(w)).join('  ') + '\n' + rows.slice(1).map(line).join('\n');
}

export interface BenchIntegrator {
  tag: string;
  op: Record<string, string>;
  assetNetworkId: string;
  networkId: string;
  org: string;
  member: Record<string, string>;
  app: string;
  environment: string;
  apiKey: Record<string, string>;
}

/**
 * A platform operator (as `npm run operator:create` makes one), an enabled sandbox asset-network
 * (6 decimals) on a new sandbox network, and an integrator: organization, owner session,
 * application, SANDBOX environment and API key. With `evm`: an EVM PRODUCTION network instead,
 * the asset-network being the token at `evm.contract`, and a PRODUCTION environment.
 */
export async function setupBenchIntegrator(
  deps: Pick<Deps, 'db'>,
  call: Call,
  scenario: string,
  opts: { code: string; requiredConfirmations: number; evm?: { contract: string } },
): Promise<BenchIntegrator> {
  const environmentType = opts.evm ? 'PRODUCTION' : 'SANDBOX';
  const expect = expectStatus(scenario);
  const { key, keyHash } = newOperatorKey();
  const tag = `${Date.now().toString(36)}`.toUpperCase();
  await deps.db.operator.create({ data: { email: `bench.${scenario}.${tag.toLowerCase()}@example.com`, name: 'Bench operator', keyHash } });
  const op = { 'x-operator-key': key };
  const asset = idOf(
    expect(await call('POST', '/v1/platform/assets', { code: `${opts.code}${tag}`, name: `Bench ${scenario} dollar ${tag}`, decimals: 6 }, op), 201, 'asset'),
  );
  const networkId = idOf(
    expect(
      await call(
        'POST',
        '/v1/platform/networks',
        {
          name: `Bench ${scenario} ${tag}`,
          kind: opts.evm ? 'EVM' : 'SANDBOX',
          environmentType,
          blockTimeSeconds: opts.evm ? 1 : 5,
          requiredConfirmations: opts.requiredConfirmations,
        },
        op,
      ),
      201,
      'network',
    ),
  );
  const assetNetworkId = idOf(
    expect(
      await call(
        'POST',
        '/v1/platform/asset-networks',
        { assetId: asset, networkId, decimals: 6, contractReference: opts.evm?.contract ?? null, minimumDeposit: '1' },
        op,
      ),
      201,
      'asset-network',
    ),
  );
  expect(await call('POST', `/v1/platform/asset-networks/${assetNetworkId}/enable`, undefined, op), 204, 'enable');

  const email = `bench.${scenario}.owner.${tag.toLowerCase()}@example.com`;
  const password = 'correct horse battery staple';
  const org = expect(await call('POST', '/v1/auth/signup', { email, password, name: 'Bench', organizationName: `${scenario} ${tag}` }), 201, 'signup').body!
    .organizationId as string;
  const member = { authorization: `Bearer ${expect(await call('POST', '/v1/auth/login', { email, password }), 200, 'login').body!.accessToken}` };
  const app = expect(await call('POST', `/v1/organizations/${org}/applications`, { name: `${scenario} bench` }, member), 201, 'application').body!.id as string;
  const environment = expect(await call('POST', `/v1/applications/${app}/environments`, { type: environmentType }, member), 201, 'environment').body!
    .id as string;
  const apiKey = {
    'x-api-key': expect(await call('POST', `/v1/environments/${environment}/api-keys`, undefined, member), 201, 'api key').body!.apiKey as string,
  };
  return { tag, op, assetNetworkId, networkId, org, member, app, environment, apiKey };
}

/**
 * A custodial wallet and a beneficiary account of the integrator, and the request that creates a
 * payment intent on them as an integrator does (POST /v1/organizations/{org}/payment-intents with
 * the walletId, expiring in an hour, answered 201): the set-up of the deposits and payment-intents
 * scenarios.
 */
export async function setupIntentPayee(call: Call, integrator: BenchIntegrator, scenario: string) {
  const expect = expectStatus(scenario);
  const { assetNetworkId, networkId, org, app, apiKey } = integrator;
  const walletId = idOf(
    expect(await call('POST', `/v1/applications/${app}/wallets`, { networkId, custodyMode: 'CUSTODIAL', label: 'bench' }, apiKey), 201, 'wallet'),
  );
  const beneficiaryAccountId = idOf(expect(await call('POST', `/v1/organizations/${org}/accounts`, { name: 'Seller' }, apiKey), 201, 'account'));
  return {
    walletId,
    /** With `idempotencyKey`, sent as the Idempotency-Key header (as the API docs tell integrators to). */
    createIntent: async (amount: bigint, idempotencyKey?: string) =>
      expect(
        await call(
          'POST',
          `/v1/organizations/${org}/payment-intents`,
          { assetNetworkId, amount: amount.toString(), beneficiaryAccountId, walletId, expiresInSeconds: 3600 },
          idempotencyKey === undefined ? apiKey : { ...apiKey, 'idempotency-key': idempotencyKey },
        ),
        201,
        'payment intent',
      ),
  };
}

/**
 * The treasury's HOT address for withdrawals (docs/withdrawals.md), as the withdrawal benchmarks set
 * it up: registered by the operator (a generated key) for the integrator's asset-network, funded with
 * `funding` by a sandbox send (not mined: the caller mines when it needs the block), and the network
 * resource reserve seeded with `reserve` (it pays every broadcast's network cost). Answers the address.
 */
export async function fundedHotAddress(
  call: Call,
  s: Pick<BenchIntegrator, 'assetNetworkId' | 'apiKey' | 'op'>,
  opts: { label: string; funding: bigint; reserve: bigint },
): Promise<string> {
  const expect = expectStatus('hot address');
  const { assetNetworkId, apiKey, op } = s;
  const body = { assetNetworkIds: [assetNetworkId], tier: 'HOT', control: 'GENERATED', label: opts.label };
  const hot = expect(await call('POST', '/v1/admin/treasury/controlled-addresses', body, op), 201, 'controlled address');
  const address = expect(await call('GET', hot.headers.get('location')!, undefined, op), 200, 'get controlled address').body!.address as string;
  expect(await call('POST', '/v1/sandbox/deposits', { address, amount: opts.funding.toString(), assetNetworkId }, apiKey), 201, 'sandbox send');
  expect(await call('POST', '/v1/admin/network-resource-reserve/seed', { assetNetworkId, amount: opts.reserve.toString() }, op), 200, 'reserve seed');
  return address;
}

/**
 * An account of the organization funded in the ledger (DEBIT the asset-network's CHAIN_CLEARING,
 * CREDIT the account's CUSTOMER balance), as the withdrawal benchmarks fund what they withdraw from;
 * `key` names the posting (idempotent).
 */
export async function fundBenchAccount(
  deps: Pick<Deps, 'db' | 'clock'>,
  a: { key: string; organizationId: string; assetNetworkId: string; accountId: string; amount: bigint },
): Promise<void> {
  const { organizationId, assetNetworkId, accountId, amount } = a;
  await postLedgerTransaction(deps.db, {
    idempotencyKey: a.key,
    nature: 'bench.funding',
    organizationId,
    referenceType: 'Account',
    referenceId: accountId,
    lines: [
      { account: ledgerAccounts.clearing(assetNetworkId), direction: 'DEBIT', amount },
      { account: { kind: 'CUSTOMER', ownerId: accountId, organizationId, assetNetworkId }, direction: 'CREDIT', amount },
    ],
    postedAt: deps.clock.now(),
  });
}
