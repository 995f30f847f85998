import { describe, expect, test } from 'vitest';
import { createViewer, signUpMember } from '../../test/harness';
import { moneySuite } from '../../test/money-suite';
import { sandboxMine, sandboxSend } from '../../test/money-helpers';
import { createIntent, drainChainSync, eventsOf, moneyFixture, type MoneyFixture } from '../../test/fixtures/deposits/testing';

const suite = moneySuite();

const post = (path: string, headers: Record<string, string>, body?: unknown) =>
  suite.app.rest('POST', path, { headers, ...(body !== undefined ? { body } : {}) });
const txOf = async (f: MoneyFixture, id: string) => (await suite.app.rest('GET', `/v1/transactions/${id}`, { headers: f.apiKeyHeaders })).body;
const lastEvents = async (f: MoneyFixture, n: number) => (await eventsOf(suite.app, f.organizationId)).slice(-n);

const viewerOf = async (f: MoneyFixture) => (await createViewer(suite.app, f.organizationId)).headers;

describe('reads', () => {
  test('GET /v1/transactions/{id} (members with account-read, API keys) equals GraphQL; 404 across organizations; a page of transactions', async () => {
    const f = await moneyFixture(suite.app);
    const a = await createIntent(suite.app, f);
    const b = await createIntent(suite.app, f);
    const c = await createIntent(suite.app, f);
    const rest = await suite.app.rest('GET', `/v1/transactions/${a.transactionId}`, { headers: f.member.headers });
    expect(rest.status).toBe(200);
    expect(rest.body).toMatchObject({ id: a.transactionId, status: 'AWAITING_FUNDS', paymentIntentId: a.id, environmentType: 'SANDBOX' });
    const viewer = await viewerOf(f);
    expect((await suite.app.rest('GET', `/v1/transactions/${a.transactionId}`, { headers: viewer })).status).toBe(200);
    const other = await signUpMember(suite.app);
    expect((await suite.app.rest('GET', `/v1/transactions/${a.transactionId}`, { headers: other.headers })).status).toBe(404);
    expect((await suite.app.rest('GET', `/v1/transactions/${crypto.randomUUID()}`, { headers: f.apiKeyHeaders })).status).toBe(404);
    type Page = { organization: { transactions: { nodes: { id: string }[]; pageInfo: { hasNextPage: boolean; endCursor: string | null } } } };
    const list = `query($org: ID!, $after: String) {
      organization(id: $org) { transactions(first: 2, after: $after, orderBy: OLDEST_FIRST) { nodes { id } pageInfo { hasNextPage endCursor } } }
    }`;
    const page = await suite.app.gql<Page>(list, { org: f.organizationId }, f.apiKeyHeaders);
    const ids = [a, b, c].map((x) => x.transactionId).sort();
    expect(page.data!.organization.transactions.nodes.map((x) => x.id)).toEqual(ids.slice(0, 2));
    const next = await suite.app.gql<Page>(list, { org: f.organizationId, after: page.data!.organization.transactions.pageInfo.endCursor }, f.apiKeyHeaders);
    expect(next.data!.organization.transactions).toEqual({ nodes: [{ id: ids[2] }], pageInfo: { hasNextPage: false, endCursor: ids[2] } });
    const foreign = await suite.app.gql(
      `query($org: ID!) { organization(id: $org) { transactions { nodes { id } } } }`,
      { org: f.organizationId },
      other.headers,
    );
    expect(foreign.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });
});

describe('cancel', () => {
  test('AWAITING_FUNDS -> CANCELLED with its intent; transaction.cancelled with the default Reason; 409 after', async () => {
    const f = await moneyFixture(suite.app);
    const pi = await createIntent(suite.app, f);
    expect((await post(`/v1/transactions/${pi.transactionId}/cancel`, f.apiKeyHeaders)).status).toBe(204);
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'CANCELLED', cancelReason: 'Cancelled by the integrator' });
    expect((await suite.app.rest('GET', `/v1/payment-intents/${pi.id}`, { headers: f.apiKeyHeaders })).body.status).toBe('CANCELLED');
    expect(await lastEvents(f, 2)).toEqual([
      { type: 'payment_intent.cancelled', body: { PaymentIntentId: pi.id } },
      { type: 'transaction.cancelled', body: { TransactionId: pi.transactionId, Reason: 'Cancelled by the integrator' } },
    ]);
    const again = await post(`/v1/transactions/${pi.transactionId}/cancel`, f.apiKeyHeaders, { reason: 'again' });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('INVALID_STATE');
    const viewer = await viewerOf(f);
    expect((await post(`/v1/transactions/${pi.transactionId}/cancel`, viewer)).status).toBe(403);
  });

  test('refused once funded (RESERVED) and while frozen', async () => {
    const f = await moneyFixture(suite.app, { requiredConfirmations: 1 });
    const pi = await createIntent(suite.app, f);
    await sandboxSend(suite.app, f.apiKeyHeaders, { address: pi.address, amount: 1_000_000n, assetNetworkId: f.catalog.assetNetworkId });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId);
    await drainChainSync(suite.app);
    expect((await post(`/v1/transactions/${pi.transactionId}/cancel`, f.apiKeyHeaders)).status).toBe(409);
    const pi2 = await createIntent(suite.app, f);
    expect((await post(`/v1/transactions/${pi2.transactionId}/freeze`, f.member.headers, { reason: 'review' })).status).toBe(204);
    const r = await post(`/v1/transactions/${pi2.transactionId}/cancel`, f.apiKeyHeaders);
    expect(r.status).toBe(409);
    expect(r.body.detail).toMatch(/frozen/);
  });
});

describe('freeze and unfreeze', () => {
  test('a member with payment-manage freezes with a reason and unfreezes: events with ActorMemberId, audit; 409 on illegal moves', async () => {
    const f = await moneyFixture(suite.app);
    const pi = await createIntent(suite.app, f);
    const path = `/v1/transactions/${pi.transactionId}`;
    expect((await post(`${path}/freeze`, f.apiKeyHeaders, { reason: 'x' })).status).toBe(403);
    expect((await post(`${path}/freeze`, await viewerOf(f), { reason: 'x' })).status).toBe(403);
    expect((await post(`${path}/freeze`, f.member.headers, { reason: '' })).status).toBe(400);
    expect((await post(`${path}/freeze`, f.member.headers)).status).toBe(400);
    expect((await post(`${path}/unfreeze`, f.member.headers)).status).toBe(409);
    const other = await signUpMember(suite.app);
    expect((await post(`${path}/freeze`, other.headers, { reason: 'x' })).status).toBe(404);

    expect((await post(`${path}/freeze`, f.member.headers, { reason: 'suspicious payer' })).status).toBe(204);
    expect(await txOf(f, pi.transactionId)).toMatchObject({
      status: 'AWAITING_FUNDS',
      frozen: true,
      frozenReason: 'suspicious payer',
      frozenByMemberId: f.member.memberId,
    });
    expect((await post(`${path}/freeze`, f.member.headers, { reason: 'twice' })).status).toBe(409);
    expect((await post(`${path}/unfreeze`, f.member.headers)).status).toBe(204);
    expect(await txOf(f, pi.transactionId)).toMatchObject({ frozen: false, frozenReason: null, frozenByMemberId: null });
    expect(await lastEvents(f, 2)).toEqual([
      { type: 'transaction.frozen', body: { TransactionId: pi.transactionId, Reason: 'suspicious payer', ActorMemberId: f.member.memberId } },
      { type: 'transaction.unfrozen', body: { TransactionId: pi.transactionId, ActorMemberId: f.member.memberId } },
    ]);
    const audit = await suite.app.deps.db.auditLogEntry.findMany({
      where: { entityId: pi.transactionId, action: { startsWith: 'transaction.' } },
      orderBy: [{ occurredAt: 'asc' }, { id: 'asc' }],
    });
    expect(audit.map((a) => `${a.action} ${a.actorType}`).sort()).toEqual([
      'transaction.created API_KEY',
      'transaction.frozen MEMBER',
      'transaction.unfrozen MEMBER',
    ]);
    // GraphQL: the same operations.
    const g = await suite.app.gql<{ freezeTransaction: { frozen: boolean } }>(
      `mutation($id: ID!) { freezeTransaction(id: $id, input: { reason: "again" }) { frozen } }`,
      { id: pi.transactionId },
      f.member.headers,
    );
    expect(g.data?.freezeTransaction).toEqual({ frozen: true });
    // A cancelled transaction cannot be frozen.
    await post(`${path}/unfreeze`, f.member.headers);
    await post(`${path}/cancel`, f.apiKeyHeaders);
    expect((await post(`${path}/freeze`, f.member.headers, { reason: 'late' })).status).toBe(409);
  });

  test('a frozen transaction still receives its funds (reserved) and keeps the flag', async () => {
    const f = await moneyFixture(suite.app, { requiredConfirmations: 1 });
    const pi = await createIntent(suite.app, f);
    await post(`/v1/transactions/${pi.transactionId}/freeze`, f.member.headers, { reason: 'hold' });
    await sandboxSend(suite.app, f.apiKeyHeaders, { address: pi.address, amount: 1_000_000n, assetNetworkId: f.catalog.assetNetworkId });
    await sandboxMine(suite.app, f.apiKeyHeaders, f.catalog.networkId);
    await drainChainSync(suite.app);
    expect(await txOf(f, pi.transactionId)).toMatchObject({ status: 'RESERVED', frozen: true, fundedAmount: '1000000' });
  });
});
