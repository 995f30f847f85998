import { randomBytes } from 'node:crypto';
import type { PrismaClient } from '../src/db/prisma';
import { lockNetwork, payerAddress, tip } from '../src/chains/sandbox/chain';

/**
 * A transfer written straight into the sandbox chain's table, past every check of a send (an
 * operator's mistake: no bound checked), for the failure-isolation tests. `block`: mined in that
 * block; `'tip'`: mined in the network's tip block, read under the network's lock (the block
 * producer takes it too), so that no block is mined and no sync moves its cursor past that block
 * before the transfer commits (syncs follow what changed since their cursor); null: pending in the
 * mempool. `faucetOf`: sent from that organization's faucet (mined whatever its balance), else from
 * an unknown address.
 */
export async function plantSandboxTransfer(
  db: PrismaClient,
  to: { networkId: string; assetNetworkId: string; address: string },
  amount: bigint,
  block: { hash: string | null; height: number } | 'tip' | null,
  opts: { faucetOf?: string; now?: Date } = {},
): Promise<void> {
  const now = opts.now ?? new Date();
  await db.$transaction(async (tx) => {
    let mined = block;
    if (mined === 'tip') {
      await lockNetwork(tx, to.networkId);
      mined = await tip(tx, to.networkId);
    }
    await tx.sandboxTransaction.create({
      data: {
        networkId: to.networkId,
        assetNetworkId: to.assetNetworkId,
        txHash: '0x' + randomBytes(32).toString('hex'),
        fromAddress: opts.faucetOf ? payerAddress(opts.faucetOf) : '0x' + 'f'.repeat(40),
        toAddress: to.address,
        amount: amount.toString(),
        senderOrganizationId: opts.faucetOf ?? null,
        status: mined ? 'MINED' : 'PENDING',
        replaceable: false,
        willRevert: false,
        blockHash: mined?.hash ?? null,
        blockHeight: mined?.height ?? null,
        createdAt: now,
        updatedAt: now,
      },
    });
  });
}
