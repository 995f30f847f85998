import type { Deps } from '../src/context';
import { newOperatorKey } from '../src/auth/secrets';

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
) => Promise<{ status: number; headers: Headers; body?: Record<string, any>; text: string }>;

/** How many requests were answered 503 (overloaded, nothing changed: issue 22) and retried by callerOf. */
export const overload = { retries: 0 };

/**
 * A Call against the service at `base` (JSON bodies), as a well-behaved client: a 503 is retried
 * after its Retry-After, up to 10 times (counted in `overload.retries`).
 */
export const callerOf =
  (base: string): Call =>
  async (method, path, body, headers = {}) => {
    let res: Response;
    for (let attempt = 1; ; attempt++) {
      res = await fetch(new URL(path, base), {
        method,
        headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
      if (res.status !== 503 || attempt >= 10) break;
      await res.text();
      overload.retries++;
      await new Promise((ok) => setTimeout(ok, Number(res.headers.get('retry-after') ?? 1) * 1000));
    }
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, any>) : undefined, text };
  };

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
export const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

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
