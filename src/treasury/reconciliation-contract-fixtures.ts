import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import type { TestApp } from '../../test/harness';
import { createApiKey, signUpMember } from '../../test/harness';
import { fundedTransaction } from '../settlements/testing';

/**
 * Contract fixtures (test/contract.test.ts) of the reconciliation routes (docs/reconciliation.md):
 * data through the public REST surface; a divergence is planted with a ledger correction that moves
 * CHAIN_CLEARING without the chain.
 */
export function reconciliationContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, operator, random, ok } = contractCaseHelpers(getApp);

  /** A run and the BALANCE_MISMATCH it found for a new asset-network whose CHAIN_CLEARING moved by 10 without the chain. */
  async function planted() {
    const { f } = await fundedTransaction(app(), 1_000n);
    const an = f.catalog.assetNetworkId;
    const headers = await operator();
    const lines = (a: string, b: string) => [
      { account: { kind: a, assetNetworkId: an }, direction: 'DEBIT', amount: '10' },
      { account: { kind: b, assetNetworkId: an }, direction: 'CREDIT', amount: '10' },
    ];
    await ok(app().rest('POST', '/v1/admin/ledger-corrections', { headers, body: { reason: 'planted', organizationId: f.organizationId, lines: lines('CHAIN_CLEARING', 'SUSPENSE') } }), 201, 'plant');
    const run = await ok(app().rest('POST', '/v1/admin/reconciliations/execute', { headers }), 201, 'execute');
    const divergence = (run.body.divergences as { id: string; assetNetworkId: string }[]).find((d) => d.assetNetworkId === an)!;
    const undo = { divergenceId: divergence.id, resolution: 'CORRECTION', reason: 'undo the planted correction', organizationId: f.organizationId, lines: lines('SUSPENSE', 'CHAIN_CLEARING') };
    return { headers, reconciliationId: run.body.id as string, divergenceId: divergence.id, undo };
  }

  return {
    AdminExecuteReconciliation: [
      success('operator', async () => ({ variables: {}, headers: await operator() })),
      failure('member', 'PRINCIPAL_NOT_ALLOWED', async () => ({ variables: {}, headers: (await signUpMember(app())).headers })),
    ],
    AdminResolveReconciliationDivergence: [
      success('a planted balance mismatch, by a correction', async () => {
        const p = await planted();
        return { variables: { reconciliationId: p.reconciliationId, input: p.undo }, headers: p.headers };
      }),
      failure('resolved already', 'INVALID_STATE', async () => {
        const p = await planted();
        await ok(app().rest('POST', `/v1/admin/reconciliations/${p.reconciliationId}/resolve-divergence`, { headers: p.headers, body: p.undo }), 204, 'resolve');
        return { variables: { reconciliationId: p.reconciliationId, input: { divergenceId: p.divergenceId, resolution: 'ACCEPT_CHAIN', reason: 'again' } }, headers: p.headers };
      }),
      failure('unknown reconciliation', 'NOT_FOUND', async () => ({
        variables: { reconciliationId: random(), input: { divergenceId: random(), resolution: 'ACCEPT_CHAIN', reason: 'x' } },
        headers: await operator(),
      })),
      failure('correction without lines', 'VALIDATION_FAILED', async () => {
        const p = await planted();
        return { variables: { reconciliationId: p.reconciliationId, input: { divergenceId: p.divergenceId, resolution: 'CORRECTION', reason: 'x' } }, headers: p.headers };
      }),
    ],
    SearchReconciliations: [
      success('first page', async () => {
        const headers = await operator();
        await ok(app().rest('POST', '/v1/admin/reconciliations/execute', { headers }), 201, 'execute');
        return { variables: { take: 2 }, headers };
      }),
      failure('take above 500', 'VALIDATION_FAILED', async () => ({ variables: { take: 501 }, headers: await operator() })),
    ],
    GetReconciliation: [
      success('a run', async () => {
        const headers = await operator();
        const run = await ok(app().rest('POST', '/v1/admin/reconciliations/execute', { headers }), 201, 'execute');
        return { variables: { id: run.body.id }, headers };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
      failure('API key', 'PRINCIPAL_NOT_ALLOWED', async () => {
        const m = await signUpMember(app());
        return { variables: { id: random() }, headers: (await createApiKey(app(), m)).headers };
      }),
    ],
  };
}
