import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import type { TestApp } from '../../test/harness';
import { drainDeliveries, sandboxEventDelivery } from '../../test/webhook-helpers';

/** Contract cases of the sandbox webhook facility (test/contract.test.ts). */
export function webhookSandboxContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const { success, failure, random } = contractCaseHelpers(getApp);
  // Port 9 (discard) refuses connections: every attempt fails, the delivery stays pending.
  const pending = () => sandboxEventDelivery(getApp(), 'http://127.0.0.1:9/hooks');
  return {
    SandboxFastForwardWebhookDelivery: [
      success('the next attempt of a pending sandbox delivery, by its API key', async () => {
        const d = await pending();
        return { variables: { id: d.deliveryId }, headers: d.key.headers };
      }),
      success('the remaining attempts after a failed one, by a member', async () => {
        const d = await pending();
        await drainDeliveries(getApp());
        return { variables: { id: d.deliveryId, input: { attempts: 'REMAINING' } }, headers: d.member.headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await pending()).key.headers })),
    ],
  };
}
