import type { TestApp } from '../../test/harness';
import type { MoneyDeps } from '../kernel/service';
import { createIntent, drainChainSync, moneyDeps, moneyFixture, type MoneyFixture } from '../deposits/testing';
import { sandboxMine, sandboxSend } from '../../test/money-helpers';
import { RELEASE_EVALUATE_QUEUE, RELEASE_SWEEP_QUEUE, REFUND_EXECUTE_QUEUE, RETAINED_RELEASE_QUEUE, SETTLEMENT_EXECUTE_QUEUE } from '../kernel/queues';
import { settlementHandlers } from './jobs';
import { releaseHandlers } from './release-jobs';
import { refundHandlers } from '../refunds/jobs';
import { withdrawalHandlers } from '../withdrawals/jobs';
import { WITHDRAWAL_BROADCAST_QUEUE } from '../kernel/queues';
import { RESERVE_REPLENISH_QUEUE } from '../kernel/queues';
import { reserveHandlers } from '../treasury/reserve';

/**
 * Test drivers for release, settlement and refund work (tests only). Test apps send jobs but work
 * no queue: drainMoneyWork runs the real handlers, the way the job runner would, until every queue
 * is empty. Jobs due later (startAfter) run too: tests move time with the clock, not by waiting.
 */
type Handler = (deps: MoneyDeps, data: any) => Promise<unknown>;

/** The handler of each queue, as jobs/ registers it. */
const handlers: Record<string, Handler> = {
  [RELEASE_EVALUATE_QUEUE]: releaseHandlers[RELEASE_EVALUATE_QUEUE],
  [RELEASE_SWEEP_QUEUE]: releaseHandlers[RELEASE_SWEEP_QUEUE],
  [SETTLEMENT_EXECUTE_QUEUE]: settlementHandlers[SETTLEMENT_EXECUTE_QUEUE],
  [RETAINED_RELEASE_QUEUE]: settlementHandlers[RETAINED_RELEASE_QUEUE],
  [REFUND_EXECUTE_QUEUE]: refundHandlers[REFUND_EXECUTE_QUEUE],
  [WITHDRAWAL_BROADCAST_QUEUE]: withdrawalHandlers[WITHDRAWAL_BROADCAST_QUEUE],
  [RESERVE_REPLENISH_QUEUE]: reserveHandlers[RESERVE_REPLENISH_QUEUE],
};

/** Runs the queued jobs of one queue with its real handler; answers how many ran. */
export async function drainQueue(app: TestApp, queue: string, handler: Handler = handlers[queue]!): Promise<number> {
  const boss = app.deps.boss!;
  let ran = 0;
  for (let round = 0; round < 100; round++) {
    const jobs = await boss.fetch<unknown>(queue, { batchSize: 100, ignoreStartAfter: true });
    if (!jobs.length) break;
    for (const j of jobs) {
      try {
        await handler({ ...moneyDeps(app), sealingKey: app.deps.sealingKey }, j.data);
        await boss.complete(queue, j.id);
      } catch (err) {
        await boss.fail(queue, j.id, { message: String((err as Error).message) });
        throw err;
      }
      ran++;
    }
  }
  return ran;
}

/** Chain sync, then every release/settlement/refund queue, until nothing is left to run. */
export async function drainMoneyWork(app: TestApp): Promise<number> {
  let total = 0;
  for (let round = 0; round < 50; round++) {
    let ran = await drainChainSync(app);
    for (const queue of Object.keys(handlers)) ran += await drainQueue(app, queue);
    total += ran;
    if (!ran) return total;
  }
  throw new Error('drainMoneyWork: jobs keep coming after 50 rounds');
}

/** A RESERVED transaction holding `amount` in its escrow: a new fixture (or `f`), an intent paid in full, mined and synced. */
export async function fundedTransaction(app: TestApp, amount = 1_000_000n, f?: MoneyFixture): Promise<{ f: MoneyFixture; transactionId: string; intent: { id: string; address: string } }> {
  const fx = f ?? (await moneyFixture(app, { requiredConfirmations: 1 }));
  const pi = await createIntent(app, fx, { amount: amount.toString() });
  await sandboxSend(app, fx.apiKeyHeaders, { address: pi.address, amount, assetNetworkId: fx.catalog.assetNetworkId });
  await sandboxMine(app, fx.apiKeyHeaders, fx.catalog.networkId, 1);
  await drainMoneyWork(app);
  return { f: fx, transactionId: pi.transactionId, intent: pi };
}
