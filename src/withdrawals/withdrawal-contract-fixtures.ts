import { secp256k1 } from '@noble/curves/secp256k1.js';
import { contractCaseHelpers, type ContractCase } from '../../test/contract-case';
import { signUpMember, type TestApp } from '../../test/harness';
import { sandboxMine, sandboxSend } from '../../test/money-helpers';
import { drainMoneyWork, fundedTransaction } from '../settlements/testing';
import { addressOf, bytesToHex, derivePrivateKey, derivePublicKey, generateKeyPair } from '../chains/secp256k1';

/**
 * Contract fixtures (test/contract.test.ts) of the withdrawal routes, the withdrawal and payout
 * policies and the SelfCustody signing routes. Each case builds its own integrator, funded account
 * (a funded transaction settled to it) and destination through the public REST surface.
 */
export function withdrawalFlowContractFixtures(getApp: () => TestApp): Record<string, ContractCase[]> {
  const app = () => getApp();
  const { success, failure, operator, random, ok } = contractCaseHelpers(getApp);
  const idOf = (r: { headers: Headers }) => r.headers.get('location')!.split('/').pop()!;

  /** An account holding 1,000,000 and an ACTIVE destination. */
  async function funded() {
    const { f, transactionId } = await fundedTransaction(app(), 1_000_000n);
    await ok(app().rest('POST', `/v1/transactions/${transactionId}/settlements`, { headers: f.apiKeyHeaders }), 201, 'settlement');
    await drainMoneyWork(app());
    const d = await ok(
      app().rest('POST', `/v1/organizations/${f.organizationId}/withdrawal-destinations`, { headers: f.apiKeyHeaders, body: { networkId: f.catalog.networkId, address: '0x00000000000000000000000000000000000000d2' } }),
      201, 'destination',
    );
    const input = (amount: string, extra: Record<string, unknown> = {}) => ({ amount, assetNetworkId: f.catalog.assetNetworkId, withdrawalDestinationId: idOf(d), ...extra });
    return { f, accountId: f.beneficiaryAccountId, input };
  }
  async function withdrawal(opts: { threshold?: boolean } = {}) {
    const x = await funded();
    if (opts.threshold)
      await ok(app().rest('POST', `/v1/admin/organizations/${x.f.organizationId}/withdrawal-policy`, { headers: await operator(), body: { approvalThreshold: '10' } }), 204, 'policy');
    const r = await ok(app().rest('POST', `/v1/accounts/${x.accountId}/withdrawals`, { headers: x.f.apiKeyHeaders, body: x.input('1000') }), 201, 'withdrawal');
    return { ...x, id: idOf(r) };
  }
  /** A SELF_CUSTODY withdrawal awaiting its signature, its signing request and the right signature. */
  async function signing() {
    const x = await funded();
    const root = generateKeyPair();
    const w = await ok(
      app().rest('POST', `/v1/applications/${x.f.applicationId}/wallets`, { headers: x.f.apiKeyHeaders, body: { networkId: x.f.catalog.networkId, custodyMode: 'SELF_CUSTODY', publicKey: root.publicKey } }),
      201, 'wallet',
    );
    await sandboxSend(app(), x.f.apiKeyHeaders, { address: addressOf(derivePublicKey(root.publicKey, 0)), amount: 100_000n, assetNetworkId: x.f.catalog.assetNetworkId });
    await sandboxMine(app(), x.f.apiKeyHeaders, x.f.catalog.networkId, 1);
    const r = await ok(app().rest('POST', `/v1/accounts/${x.accountId}/withdrawals`, { headers: x.f.apiKeyHeaders, body: x.input('1000', { walletId: idOf(w), sourceIndex: 0 }) }), 201, 'withdrawal');
    const withdrawalId = idOf(r);
    const sr = await ok(app().rest('POST', `/v1/environments/${x.f.environmentId}/signing-requests`, { headers: x.f.apiKeyHeaders, body: { withdrawalId } }), 201, 'signing request');
    const id = idOf(sr);
    const got = await ok(app().rest('GET', `/v1/signing-requests/${id}`, { headers: x.f.apiKeyHeaders }), 200, 'get signing request');
    const bytes = new TextEncoder().encode(got.body.canonicalPayload as string);
    const signature = bytesToHex(secp256k1.sign(bytes, derivePrivateKey(root.privateKey, 0)));
    const wrong = bytesToHex(secp256k1.sign(bytes, generateKeyPair().privateKey));
    return { ...x, withdrawalId, id, signature, wrong };
  }

  return {
    RequestWithdrawal: [
      success('API key, with an idempotency key', async () => {
        const x = await funded();
        return { variables: { accountId: x.accountId, input: x.input('5000'), idempotencyKey: 'k-' + random() }, headers: x.f.apiKeyHeaders };
      }),
      failure('more than the balance', 'INVALID_STATE', async () => {
        const x = await funded();
        return { variables: { accountId: x.accountId, input: x.input('1000001') }, headers: x.f.apiKeyHeaders };
      }),
      failure('zero amount', 'VALIDATION_FAILED', async () => {
        const x = await funded();
        return { variables: { accountId: x.accountId, input: x.input('0') }, headers: x.f.apiKeyHeaders };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const x = await funded();
        return { variables: { accountId: x.accountId, input: x.input('5') }, headers: (await signUpMember(app())).headers };
      }),
    ],
    GetWithdrawal: [
      success('member', async () => {
        const w = await withdrawal();
        return { variables: { id: w.id }, headers: w.f.member.headers };
      }),
      failure('another organization', 'NOT_FOUND', async () => ({ variables: { id: (await withdrawal()).id }, headers: (await signUpMember(app())).headers })),
    ],
    CancelWithdrawal: [
      success('pending approval', async () => {
        const w = await withdrawal({ threshold: true });
        return { variables: { id: w.id }, headers: w.f.apiKeyHeaders };
      }),
      failure('broadcast already', 'INVALID_STATE', async () => {
        const w = await withdrawal();
        await drainMoneyWork(app());
        return { variables: { id: w.id }, headers: w.f.apiKeyHeaders };
      }),
    ],
    AdminApproveWithdrawal: [
      success('pending approval', async () => ({ variables: { id: (await withdrawal({ threshold: true })).id }, headers: await operator() })),
      failure('approved already', 'INVALID_STATE', async () => ({ variables: { id: (await withdrawal()).id }, headers: await operator() })),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: await operator() })),
    ],
    AdminRejectWithdrawal: [
      success('pending approval', async () => ({ variables: { id: (await withdrawal({ threshold: true })).id, input: { reason: 'compliance' } }, headers: await operator() })),
      failure('empty reason', 'VALIDATION_FAILED', async () => ({ variables: { id: (await withdrawal({ threshold: true })).id, input: { reason: '' } }, headers: await operator() })),
      failure('a member', 'PRINCIPAL_NOT_ALLOWED', async () => {
        const w = await withdrawal({ threshold: true });
        return { variables: { id: w.id, input: { reason: 'x' } }, headers: w.f.member.headers };
      }),
    ],
    AdminConfigureWithdrawalPolicy: [
      success('limits and threshold', async () => {
        const m = await signUpMember(app());
        return { variables: { organizationId: m.organizationId, input: { perWithdrawalLimit: '1000', periodLimit: '5000', periodSeconds: 86400, approvalThreshold: '500' } }, headers: await operator() };
      }),
      failure('period limit without period', 'VALIDATION_FAILED', async () => {
        const m = await signUpMember(app());
        return { variables: { organizationId: m.organizationId, input: { periodLimit: '5000' } }, headers: await operator() };
      }),
      failure('unknown organization', 'NOT_FOUND', async () => ({ variables: { organizationId: random(), input: {} }, headers: await operator() })),
    ],
    AdminConfigurePayoutPolicy: [
      success('destination rules', async () => {
        const m = await signUpMember(app());
        return { variables: { organizationId: m.organizationId, input: { minimumDestinationAgeSeconds: 3600, requireApprovalForNewDestination: true } }, headers: await operator() };
      }),
      failure('unknown network', 'VALIDATION_FAILED', async () => {
        const m = await signUpMember(app());
        return { variables: { organizationId: m.organizationId, input: { allowedNetworkIds: [random()] } }, headers: await operator() };
      }),
    ],
    CreateSigningRequest: [
      success('SelfCustody withdrawal awaiting its signature', async () => {
        const x = await funded();
        const root = generateKeyPair();
        const w = await ok(
          app().rest('POST', `/v1/applications/${x.f.applicationId}/wallets`, { headers: x.f.apiKeyHeaders, body: { networkId: x.f.catalog.networkId, custodyMode: 'SELF_CUSTODY', publicKey: root.publicKey } }),
          201, 'wallet',
        );
        const r = await ok(app().rest('POST', `/v1/accounts/${x.accountId}/withdrawals`, { headers: x.f.apiKeyHeaders, body: x.input('1000', { walletId: idOf(w), sourceIndex: 3 }) }), 201, 'withdrawal');
        return { variables: { environmentId: x.f.environmentId, input: { withdrawalId: idOf(r) } }, headers: x.f.apiKeyHeaders };
      }),
      failure('custodial withdrawal', 'INVALID_STATE', async () => {
        const w = await withdrawal();
        return { variables: { environmentId: w.f.environmentId, input: { withdrawalId: w.id } }, headers: w.f.apiKeyHeaders };
      }),
      failure('another organization', 'NOT_FOUND', async () => {
        const w = await withdrawal();
        return { variables: { environmentId: w.f.environmentId, input: { withdrawalId: w.id } }, headers: (await signUpMember(app())).headers };
      }),
    ],
    GetSigningRequest: [
      success('pending', async () => {
        const s = await signing();
        return { variables: { id: s.id }, headers: s.f.apiKeyHeaders };
      }),
      failure('unknown', 'NOT_FOUND', async () => ({ variables: { id: random() }, headers: (await signUpMember(app())).headers })),
    ],
    SubmitSigningRequestSignature: [
      success('the right signature', async () => {
        const s = await signing();
        return { variables: { id: s.id, input: { signature: s.signature } }, headers: s.f.apiKeyHeaders };
      }),
      failure('a wrong signature', 'VALIDATION_FAILED', async () => {
        const s = await signing();
        return { variables: { id: s.id, input: { signature: s.wrong } }, headers: s.f.apiKeyHeaders };
      }),
      failure('signed already', 'INVALID_STATE', async () => {
        const s = await signing();
        await ok(app().rest('POST', `/v1/signing-requests/${s.id}/signature`, { headers: s.f.apiKeyHeaders, body: { signature: s.signature } }), 204, 'sign');
        return { variables: { id: s.id, input: { signature: s.signature } }, headers: s.f.apiKeyHeaders };
      }),
    ],
  };
}
