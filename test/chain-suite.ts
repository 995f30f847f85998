import { describe, expect, test } from 'vitest';
import type { TestApp } from './harness';

/**
 * Money-in scenarios written once against a chain driver, run on the sandbox chain (SANDBOX
 * environment, its REST extensions) and on a real EVM node (PRODUCTION environment, anvil):
 * test/chain-suite.test.ts. Everything integrators do goes through REST; the driver pays, mines and
 * reorganizes as the chain's users would, then lets the service follow (its jobs' handlers).
 */
export interface ChainDriver {
  name: string;
  app(): TestApp;
  requiredConfirmations: number;
  /** The asset-network paid in, and its minimum deposit. */
  assetNetworkId(): string;
  minimumDeposit: bigint;
  /** A new organization of the driver's environment type: API key headers, a wallet and a beneficiary account. */
  integrator(): Promise<{ organizationId: string; headers: Record<string, string>; walletId: string; accountId: string }>;
  /** A payer sends `amount` to `address` (not mined yet). */
  pay(payer: { headers: Record<string, string> }, address: string, amount: bigint): Promise<string>;
  /** `blocks` blocks, then the service follows the chain. */
  mine(payer: { headers: Record<string, string> }, blocks: number): Promise<void>;
  /** The last `depth` blocks replaced by blocks without their transfers, then the service follows. */
  reorg(payer: { headers: Record<string, string> }, depth: number): Promise<void>;
  /** What a deposit orphaned before confirmation becomes (docs/money-in.md): the sandbox keeps it in its mempool (DETECTED); anvil forgets it (REJECTED, dropped). */
  orphanedBeforeConfirmation: 'DETECTED' | 'REJECTED';
}

export function chainScenarios(d: ChainDriver) {
  const id = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
  const get = async (h: Record<string, string>, path: string) => {
    const r = await d.app().rest('GET', path, { headers: h });
    expect(r.status, r.text).toBe(200);
    return r.body;
  };
  async function intent(amount: bigint) {
    const f = await d.integrator();
    const r = await d.app().rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
      headers: f.headers,
      body: { assetNetworkId: d.assetNetworkId(), amount: amount.toString(), beneficiaryAccountId: f.accountId, walletId: f.walletId, expiresInSeconds: 3600 },
    });
    expect(r.status, r.text).toBe(201);
    const pi = await get(f.headers, `/v1/payment-intents/${id(r)}`);
    return {
      f,
      pi,
      now: () => get(f.headers, `/v1/payment-intents/${pi.id}`),
      deposit: (n = 0) => get(f.headers, `/v1/payment-intents/${pi.id}`).then((x) => get(f.headers, `/v1/deposits/${x.depositIds[n]}`)),
    };
  }

  describe(`money in on ${d.name}`, () => {
    test('paid in full: CONFIRMING at one block, CONFIRMED and credited at the network depth; the intent SUCCEEDED, its transaction RESERVED', async () => {
      const { f, pi, now, deposit } = await intent(2_000_000n);
      const txHash = await d.pay(f, pi.address, 2_000_000n);
      await d.mine(f, 1);
      expect((await now()).status).toBe('PROCESSING');
      expect(await deposit()).toMatchObject({ txHash, status: 'CONFIRMING', confirmations: 1, amount: '2000000' });
      await d.mine(f, d.requiredConfirmations - 1);
      expect(await now()).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '2000000' });
      expect(await deposit()).toMatchObject({ status: 'CONFIRMED', confirmations: d.requiredConfirmations });
      expect((await get(f.headers, `/v1/transactions/${pi.transactionId}`)).status).toBe('RESERVED');
    });

    test('underpaid: PROCESSING until a top-up completes it; overpaid: SUCCEEDED and flagged', async () => {
      const under = await intent(3_000_000n);
      await d.pay(under.f, under.pi.address, 1_000_000n);
      await d.mine(under.f, d.requiredConfirmations);
      expect(await under.now()).toMatchObject({ status: 'PROCESSING', confirmedAmount: '1000000' });
      await d.pay(under.f, under.pi.address, 2_000_000n);
      await d.mine(under.f, d.requiredConfirmations);
      expect(await under.now()).toMatchObject({ status: 'SUCCEEDED', confirmedAmount: '3000000' });
      const over = await intent(1_000_000n);
      await d.pay(over.f, over.pi.address, 1_500_000n);
      await d.mine(over.f, d.requiredConfirmations);
      expect(await over.now()).toMatchObject({ status: 'SUCCEEDED', overpaid: true, confirmedAmount: '1500000' });
    });

    test('below the minimum deposit: REJECTED, the intent still waits', async () => {
      const { f, pi, now, deposit } = await intent(1_000_000n);
      await d.pay(f, pi.address, d.minimumDeposit - 1n);
      await d.mine(f, d.requiredConfirmations);
      expect((await now()).status).toBe('AWAITING_PAYMENT');
      expect((await deposit()).status).toBe('REJECTED');
    });

    test('a reorganization before confirmation takes the deposit back (documented state), the intent is not paid', async () => {
      const { f, pi, now, deposit } = await intent(1_000_000n);
      await d.pay(f, pi.address, 1_000_000n);
      await d.mine(f, 1);
      expect((await deposit()).status).toBe('CONFIRMING');
      await d.reorg(f, 1);
      expect((await deposit()).status).toBe(d.orphanedBeforeConfirmation);
      expect(['PROCESSING', 'AWAITING_PAYMENT']).toContain((await now()).status);
    });

    test('a reorganization after confirmation: the credited deposit is REORG_FROZEN and its transaction frozen', async () => {
      const { f, pi, now, deposit } = await intent(1_000_000n);
      await d.pay(f, pi.address, 1_000_000n);
      await d.mine(f, d.requiredConfirmations);
      expect((await now()).status).toBe('SUCCEEDED');
      await d.reorg(f, d.requiredConfirmations);
      expect((await deposit()).status).toBe('REORG_FROZEN');
      expect((await get(f.headers, `/v1/transactions/${pi.transactionId}`)).frozen).toBe(true);
    });
  });
}
