import type { TestApp } from '../../test/harness';
import { setupIntegrator, setupSandboxCatalog } from '../../test/money-helpers';
import { CHAIN_SYNC_QUEUE, type ChainSyncJob } from '../kernel/queues';
import { runChainSyncJobs } from './jobs';
import { expireDuePaymentIntents } from './payment-intents';
import type { MoneyDeps } from '../kernel/service';

/**
 * Test drivers for money in (tests only). Test apps send jobs but work no queue: these run the
 * real handlers the way the job runner would.
 */

export const moneyDeps = (app: TestApp): MoneyDeps => ({ db: app.deps.db, clock: app.deps.clock, boss: app.deps.boss });

/** Runs every queued `chain.sync` job (the real handler, coalesced per network) until none is left; answers the changes made. */
export async function drainChainSync(app: TestApp): Promise<number> {
  const boss = app.deps.boss!;
  let changes = 0;
  for (let round = 0; round < 50; round++) {
    const jobs = await boss.fetch<ChainSyncJob>(CHAIN_SYNC_QUEUE, { batchSize: 500, ignoreStartAfter: true });
    if (!jobs.length) break;
    changes += (await runChainSyncJobs(moneyDeps(app), jobs.map((j) => j.data))).changes;
    await boss.complete(CHAIN_SYNC_QUEUE, jobs.map((j) => j.id));
  }
  return changes;
}

/** The expiry sweep, as the periodic job runs it. */
export const sweepExpiries = (app: TestApp, organizationId?: string) => expireDuePaymentIntents(moneyDeps(app), organizationId ? { organizationId } : {});

/** The organization's webhook events, in the order they were emitted: [type, body]. */
export async function eventsOf(app: TestApp, organizationId: string): Promise<{ type: string; body: Record<string, unknown> }[]> {
  const rows = await app.deps.db.webhookEvent.findMany({ where: { organizationId }, orderBy: { id: 'asc' }, select: { eventType: true, body: true } });
  return rows.map((r) => ({ type: r.eventType, body: JSON.parse(r.body) as Record<string, unknown> }));
}

/**
 * A sandbox catalog (network with `requiredConfirmations`), an integrator (member, sandbox API key,
 * custodial wallet) and a beneficiary account created by the API key (so authorized for its
 * application).
 */
export async function moneyFixture(app: TestApp, opts: { requiredConfirmations?: number; minimumDeposit?: bigint } = {}) {
  const catalog = await setupSandboxCatalog(app, { requiredConfirmations: opts.requiredConfirmations ?? 3, minimumDeposit: opts.minimumDeposit ?? 0n });
  const integrator = await setupIntegrator(app, catalog);
  const acc = await app.rest('POST', `/v1/organizations/${integrator.organizationId}/accounts`, { body: { name: 'Seller' }, headers: integrator.apiKeyHeaders });
  if (acc.status !== 201) throw new Error(`account: ${acc.status} ${acc.text}`);
  const beneficiaryAccountId = acc.headers.get('location')!.split('/').pop()!;
  return { catalog, ...integrator, beneficiaryAccountId };
}
export type MoneyFixture = Awaited<ReturnType<typeof moneyFixture>>;

/** Creates a payment intent through REST with the fixture's API key and wallet; answers the intent as GetPaymentIntent shows it. */
export async function createIntent(app: TestApp, f: MoneyFixture, body: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const r = await app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
    body: { assetNetworkId: f.catalog.assetNetworkId, amount: '1000000', beneficiaryAccountId: f.beneficiaryAccountId, walletId: f.walletId, ...body },
    headers: { ...f.apiKeyHeaders, ...headers },
  });
  if (r.status !== 201) throw new Error(`create payment intent: ${r.status} ${r.text}`);
  const id = r.headers.get('location')!.split('/').pop()!;
  const got = await app.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders });
  return got.body as { id: string; transactionId: string; address: string; status: string; [k: string]: unknown };
}
