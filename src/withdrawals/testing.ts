import { expect } from 'vitest';
import type { TestApp } from '../../test/harness';
import { sandboxMine } from '../../test/money-helpers';
import { eventsOf, moneyFixture, type MoneyFixture } from '../deposits/testing';
import { drainMoneyWork, fundedTransaction } from '../settlements/testing';
import { balanceOf } from '../ledger/ledger';
import { sweepWithdrawals } from './withdrawals';

/** Test fixtures of the withdrawal tests (withdrawals.test.ts, resolution.test.ts), bound to the file's app. */
export interface WithdrawalSetup { f: MoneyFixture; accountId: string; destinationId: string; depositAddress: string }

export function withdrawalTesting(appOf: () => TestApp, destination: string) {
  const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;
  /** A fixture whose beneficiary account holds `amount` (a funded transaction settled to it) and an ACTIVE destination. */
  async function setup(amount = 1_000_000n, f?: MoneyFixture): Promise<WithdrawalSetup> {
    const app = appOf();
    const funded = await fundedTransaction(app, amount, f ?? (await moneyFixture(app, { requiredConfirmations: 1 })));
    const s = await app.rest('POST', `/v1/transactions/${funded.transactionId}/settlements`, { headers: funded.f.apiKeyHeaders });
    expect(s.status, s.text).toBe(201);
    await drainMoneyWork(app);
    const d = await app.rest('POST', `/v1/organizations/${funded.f.organizationId}/withdrawal-destinations`, { headers: funded.f.apiKeyHeaders, body: { networkId: funded.f.catalog.networkId, address: destination } });
    expect(d.status, d.text).toBe(201);
    return { f: funded.f, accountId: funded.f.beneficiaryAccountId, destinationId: idOf(d), depositAddress: funded.intent.address };
  }
  return {
    idOf,
    setup,
    /** The withdrawal.sweep job's work for the setup's organization. */
    sweep: (s: { f: MoneyFixture }) => {
      const { deps } = appOf();
      return sweepWithdrawals({ db: deps.db, clock: deps.clock, boss: deps.boss, sealingKey: deps.sealingKey }, { organizationId: s.f.organizationId });
    },
    balance: async (s: WithdrawalSetup) => {
      const b = await balanceOf(appOf().deps.db, { kind: 'CUSTOMER', ownerId: s.accountId, organizationId: s.f.organizationId, assetNetworkId: s.f.catalog.assetNetworkId });
      return { posted: b.posted, available: b.available };
    },
    get: async (s: WithdrawalSetup, id: string) => {
      const r = await appOf().rest('GET', `/v1/withdrawals/${id}`, { headers: s.f.apiKeyHeaders });
      expect(r.status, r.text).toBe(200);
      return r.body as Record<string, any>;
    },
    /** The withdrawal's webhook events, in order, without the `withdrawal.` prefix. */
    withdrawalEvents: async (s: WithdrawalSetup, id: string) =>
      (await eventsOf(appOf(), s.f.organizationId)).filter((e) => e.body.WithdrawalId === id).map((e) => e.type.replace('withdrawal.', '')),
    mine: (s: WithdrawalSetup, blocks = 1) => sandboxMine(appOf(), s.f.apiKeyHeaders, s.f.catalog.networkId, blocks),
  };
}
