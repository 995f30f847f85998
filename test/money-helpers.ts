import { randomBytes } from 'node:crypto';
import { createApiKey, createOperator, signUpMember, type DbApp, type RestApp, type RestResult } from './harness';
import { pollUntil } from './process-harness';

/**
 * Fixtures for money-in tests, all through the public REST surface: a sandbox catalog (asset,
 * SANDBOX network, ENABLED asset-network) created by a platform operator, an integrator with a
 * sandbox API key and a custodial wallet, and the sandbox chain's test helpers (send, mine, reorg,
 * drop, replace, clock). Each helper throws with the answer when the route does not succeed.
 */

async function expectStatus(r: Promise<RestResult>, status: number, what: string): Promise<RestResult> {
  const res = await r;
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${res.text}`);
  return res;
}
const idFromLocation = (r: RestResult) => r.headers.get('location')!.split('/').pop()!;
const suffix = () => randomBytes(4).toString('hex').toUpperCase();

export async function setupSandboxCatalog(
  app: RestApp & DbApp,
  opts: { requiredConfirmations?: number; minimumDeposit?: bigint; decimals?: number } = {},
): Promise<{ operator: { headers: Record<string, string> }; assetId: string; networkId: string; assetNetworkId: string }> {
  const operator = await createOperator(app);
  const headers = operator.headers;
  const tag = suffix();
  const decimals = opts.decimals ?? 6;
  const asset = await expectStatus(
    app.rest('POST', '/v1/platform/assets', { headers, body: { code: `USD${tag}`, name: `Test dollar ${tag}`, decimals } }),
    201,
    'create asset',
  );
  const network = await expectStatus(
    app.rest('POST', '/v1/platform/networks', {
      headers,
      body: {
        name: `Sandbox ${tag}`,
        kind: 'SANDBOX',
        environmentType: 'SANDBOX',
        blockTimeSeconds: 5,
        requiredConfirmations: opts.requiredConfirmations ?? 3,
      },
    }),
    201,
    'create network',
  );
  const assetId = idFromLocation(asset);
  const networkId = idFromLocation(network);
  const assetNetwork = await expectStatus(
    app.rest('POST', '/v1/platform/asset-networks', {
      headers,
      body: { assetId, networkId, decimals, contractReference: null, minimumDeposit: (opts.minimumDeposit ?? 0n).toString() },
    }),
    201,
    'create asset-network',
  );
  const assetNetworkId = idFromLocation(assetNetwork);
  await expectStatus(app.rest('POST', `/v1/platform/asset-networks/${assetNetworkId}/enable`, { headers }), 204, 'enable asset-network');
  return { operator: { headers }, assetId, networkId, assetNetworkId };
}

export async function setupIntegrator(
  app: RestApp,
  catalog: { networkId: string },
): Promise<{
  member: Awaited<ReturnType<typeof signUpMember>>;
  organizationId: string;
  applicationId: string;
  environmentId: string;
  apiKeyHeaders: Record<string, string>;
  walletId: string;
}> {
  const member = await signUpMember(app);
  const key = await createApiKey(app, member, 'SANDBOX');
  const wallet = await expectStatus(
    app.rest('POST', `/v1/applications/${key.applicationId}/wallets`, {
      headers: key.headers,
      body: { networkId: catalog.networkId, custodyMode: 'CUSTODIAL', label: 'Deposits' },
    }),
    201,
    'register wallet',
  );
  return {
    member,
    organizationId: member.organizationId,
    applicationId: key.applicationId,
    environmentId: key.environmentId,
    apiKeyHeaders: key.headers,
    walletId: idFromLocation(wallet),
  };
}

/** A payer sends `amount` base units to `address` on the sandbox chain (a PENDING transaction). */
export async function sandboxSend(
  app: RestApp,
  headers: Record<string, string>,
  body: { address: string; amount: bigint; assetNetworkId: string; replaceable?: boolean; revert?: boolean },
): Promise<{ txHash: string }> {
  const r = await expectStatus(app.rest('POST', '/v1/sandbox/deposits', { headers, body: { ...body, amount: body.amount.toString() } }), 201, 'sandbox send');
  return { txHash: r.body.txHash as string };
}

/** Mines `blocks` blocks (default 1) on the sandbox network; answers the new tip height. */
export async function sandboxMine(app: RestApp, headers: Record<string, string>, networkId: string, blocks = 1): Promise<{ height: number }> {
  const r = await expectStatus(app.rest('POST', `/v1/sandbox/networks/${networkId}/mine`, { headers, body: { blocks } }), 200, 'sandbox mine');
  return { height: r.body.height as number };
}

/** Orphans the last `depth` canonical blocks and mines depth + 1 replacement blocks; answers the new tip height. */
export async function sandboxReorg(
  app: RestApp,
  headers: Record<string, string>,
  networkId: string,
  depth: number,
  includeOrphanedTransactions?: boolean,
): Promise<{ height: number }> {
  const body = includeOrphanedTransactions === undefined ? { depth } : { depth, includeOrphanedTransactions };
  const r = await expectStatus(app.rest('POST', `/v1/sandbox/networks/${networkId}/reorg`, { headers, body }), 200, 'sandbox reorg');
  return { height: r.body.height as number };
}

/** Drops a PENDING or ORPHANED transaction. */
export async function sandboxDrop(app: RestApp, headers: Record<string, string>, txHash: string): Promise<void> {
  await expectStatus(app.rest('POST', '/v1/sandbox/transactions/drop', { headers, body: { txHash } }), 200, 'sandbox drop');
}

/** Replaces a PENDING replaceable transaction (optionally with another amount); answers the new transaction's hash. */
export async function sandboxReplace(app: RestApp, headers: Record<string, string>, txHash: string, amount?: bigint): Promise<{ txHash: string }> {
  const body = amount === undefined ? { txHash } : { txHash, amount: amount.toString() };
  const r = await expectStatus(app.rest('POST', '/v1/sandbox/transactions/replace', { headers, body }), 200, 'sandbox replace');
  return { txHash: r.body.txHash as string };
}

/** Advances the organization's sandbox clock; answers the new sandbox time (ISO 8601). */
export async function sandboxAdvanceClock(app: RestApp, headers: Record<string, string>, seconds: number): Promise<{ now: string }> {
  const r = await expectStatus(app.rest('POST', '/v1/sandbox/clock/advance', { headers, body: { seconds } }), 200, 'sandbox clock advance');
  return { now: r.body.now as string };
}

/**
 * A payment intent of 1,000,000 for `beneficiaryAccountId`, paid in full on the sandbox chain; answers
 * it once the service's job runner alone (the blocks it produces, nothing mined by hand) made it
 * SUCCEEDED and its transaction RESERVED, within `deadlineMs` each.
 */
export async function paidIntentByJobs(
  app: RestApp,
  f: { organizationId: string; walletId: string; apiKeyHeaders: Record<string, string> },
  assetNetworkId: string,
  beneficiaryAccountId: string,
  deadlineMs: number,
) {
  const pi = await expectStatus(
    app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
      headers: f.apiKeyHeaders,
      body: { assetNetworkId, amount: '1000000', beneficiaryAccountId, walletId: f.walletId },
    }),
    201,
    'payment intent',
  );
  const intent = (await app.rest('GET', `/v1/payment-intents/${idFromLocation(pi)}`, { headers: f.apiKeyHeaders })).body as {
    id: string;
    transactionId: string;
    address: string;
    depositAddressId: string;
  };
  await sandboxSend(app, f.apiKeyHeaders, { address: intent.address, amount: 1_000_000n, assetNetworkId });
  await pollUntil(
    'intent SUCCEEDED',
    async () => (await app.rest('GET', `/v1/payment-intents/${intent.id}`, { headers: f.apiKeyHeaders })).body.status,
    (s) => s === 'SUCCEEDED',
    deadlineMs,
  );
  await pollUntil(
    'transaction RESERVED',
    async () => (await app.rest('GET', `/v1/transactions/${intent.transactionId}`, { headers: f.apiKeyHeaders })).body.status,
    (s) => s === 'RESERVED',
    deadlineMs,
  );
  return intent;
}
