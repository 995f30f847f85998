import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createApiKey, createTestApp, signUpMember, type TestApp } from '../../test/harness';
import { checkLedgerInvariants } from '../../test/ledger-invariants';
import { sandboxAdvanceClock, sandboxMine, sandboxSend } from '../../test/money-helpers';
import { DELIVER_QUEUE, EXPIRE_QUEUE, EXPIRE_SWEEP_QUEUE } from '../kernel/queues';
import { registerEndpoint } from '../../test/webhook-helpers';
import { expireIfDue, type ExpireJob } from './payment-intents';
import { runExpirySweepJob } from './deposits.jobs';
import { custodialRootKey } from '../custody/wallets';
import { addressOf, derivePrivateKey, publicKeyOf } from '../chains/secp256k1';
import { sendExpirySweep, type ExpirySweepJob } from '../kernel/queues';
import { createIntent, drainChainSync, eventsOf, moneyDeps, moneyFixture, sweepExpiries, type MoneyFixture } from '../../test/fixtures/deposits/testing';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());
afterEach(() => checkLedgerInvariants(app.deps.db));

const create = (f: MoneyFixture, body: Record<string, unknown>, headers: Record<string, string> = f.apiKeyHeaders) =>
  app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
    body: { assetNetworkId: f.catalog.assetNetworkId, amount: '1000000', beneficiaryAccountId: f.beneficiaryAccountId, ...body },
    headers,
  });
const fieldOf = (r: { body: { errors?: { field: string }[] } }) => r.body.errors?.map((e) => e.field);

/** Three deliveries per intent of `ids` (the organization's endpoint), each with its delivery job, and each intent its expiry job. */
async function expectDeliveriesAndJobs(f: MoneyFixture, ids: string[]): Promise<void> {
  const n = ids.length;
  const deliveries = await app.deps.db.webhookDelivery.findMany({ where: { organizationId: f.organizationId }, select: { id: true } });
  expect(deliveries).toHaveLength(3 * n);
  const [jobs] = await app.deps.db.$queryRaw<{ deliver: bigint; expire: bigint }[]>`
    SELECT (SELECT count(*) FROM pgboss.job WHERE name = ${DELIVER_QUEUE} AND id = ANY(${deliveries.map((d) => d.id)}::uuid[])) AS deliver,
           (SELECT count(*) FROM pgboss.job WHERE name = ${EXPIRE_QUEUE} AND id = ANY(${ids}::uuid[])) AS expire`;
  expect([Number(jobs!.deliver), Number(jobs!.expire)]).toEqual([3 * n, n]);
}

describe('CreatePaymentIntent', () => {
  test('201 without a body, Location; the transaction, the events and the audit in one go; GetPaymentIntent over REST and GraphQL', async () => {
    const f = await moneyFixture(app);
    const before = (await eventsOf(app, f.organizationId)).length;
    const r = await create(f, { walletId: f.walletId, reference: 'order-42', metadata: { order: 42 }, expiresInSeconds: 900 });
    expect(r.status, r.text).toBe(201);
    expect(r.text).toBe('');
    const location = r.headers.get('location')!;
    expect(location).toMatch(/^\/v1\/payment-intents\/[0-9a-f-]{36}$/);
    const id = location.split('/').pop()!;
    const got = await app.rest('GET', location, { headers: f.apiKeyHeaders });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      id,
      organizationId: f.organizationId,
      applicationId: f.applicationId,
      environmentId: f.environmentId,
      environmentType: 'SANDBOX',
      assetNetworkId: f.catalog.assetNetworkId,
      amount: '1000000',
      status: 'AWAITING_PAYMENT',
      detectedAmount: '0',
      confirmedAmount: '0',
      overpaid: false,
      paidLate: false,
      reference: 'order-42',
      metadata: { order: 42 },
      beneficiaryAccountId: f.beneficiaryAccountId,
      payerAccountId: null,
      depositIds: [],
      succeededAt: null,
      expiredAt: null,
      cancelledAt: null,
    });
    expect(got.body.address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(new Date(got.body.expiresAt).getTime() - new Date(got.body.createdAt).getTime()).toBe(900_000);
    const tx = await app.rest('GET', `/v1/transactions/${got.body.transactionId}`, { headers: f.apiKeyHeaders });
    expect(tx.body).toMatchObject({
      status: 'AWAITING_FUNDS',
      amount: '1000000',
      fundedAmount: '0',
      frozen: false,
      paymentIntentId: id,
      participants: [{ accountId: f.beneficiaryAccountId, role: 'BENEFICIARY' }],
    });
    const events = (await eventsOf(app, f.organizationId)).slice(before);
    expect(events.map((e) => e.type)).toEqual(['transaction.created', 'payment_intent.created', 'deposit.address_generated']);
    expect(events[0]!.body).toEqual({ TransactionId: got.body.transactionId, ApplicationId: f.applicationId, ParticipantAccountIds: [f.beneficiaryAccountId] });
    expect(events[1]!.body).toEqual({ PaymentIntentId: id, TransactionId: got.body.transactionId, Amount: '1000000', ExpiresAt: got.body.expiresAt });
    expect(events[2]!.body).toEqual({ PaymentIntentId: id, Address: got.body.address, AssetNetworkId: f.catalog.assetNetworkId });
    const audit = await app.deps.db.auditLogEntry.findMany({
      where: { entityId: { in: [id, got.body.transactionId] } },
      orderBy: [{ occurredAt: 'asc' }, { id: 'asc' }],
    });
    expect(audit.map((a) => `${a.action} ${a.actorType}`).sort()).toEqual(['payment_intent.created API_KEY', 'transaction.created API_KEY']);
    // The expiry job, due at ExpiresAt.
    const [job] = await app.deps.db.$queryRaw<
      { start_after: Date }[]
    >`SELECT start_after FROM pgboss.job WHERE name = ${EXPIRE_QUEUE} AND data->>'paymentIntentId' = ${id}`;
    expect(job!.start_after.getTime()).toBe(new Date(got.body.expiresAt).getTime());
    const g = await app.gql<{ paymentIntent: { status: string; deposits: unknown[] } }>(
      `query($id: ID!) { paymentIntent(id: $id) { status deposits { id } } }`,
      { id },
      f.apiKeyHeaders,
    );
    expect(g.data?.paymentIntent).toEqual({ status: 'AWAITING_PAYMENT', deposits: [] });
  });

  test('a member names the application and environment, and may add a payer; GraphQL createPaymentIntent', async () => {
    const f = await moneyFixture(app);
    const payer = await app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: 'Buyer' }, headers: f.apiKeyHeaders });
    const payerAccountId = payer.headers.get('location')!.split('/').pop()!;
    const missing = await create(f, {}, f.member.headers);
    expect(missing.status).toBe(400);
    expect(fieldOf(missing)).toEqual(['applicationId']);
    const g = await app.gql<{ createPaymentIntent: { id: string; status: string; payerAccountId: string; environmentId: string; address: string | null } }>(
      `mutation($org: ID!, $input: CreatePaymentIntentInput!) { createPaymentIntent(organizationId: $org, input: $input) { id status payerAccountId environmentId address } }`,
      {
        org: f.organizationId,
        input: {
          applicationId: f.applicationId,
          environmentId: f.environmentId,
          assetNetworkId: f.catalog.assetNetworkId,
          amount: '5',
          beneficiaryAccountId: f.beneficiaryAccountId,
          payerAccountId,
        },
      },
      f.member.headers,
    );
    expect(g.errors).toBeUndefined();
    expect(g.data!.createPaymentIntent).toMatchObject({ status: 'AWAITING_PAYMENT', payerAccountId, environmentId: f.environmentId, address: null });
    const created = (await eventsOf(app, f.organizationId)).find(
      (e) => e.type === 'transaction.created' && e.body.ParticipantAccountIds && (e.body.ParticipantAccountIds as string[]).includes(payerAccountId),
    );
    expect(created!.body.ParticipantAccountIds).toEqual([f.beneficiaryAccountId, payerAccountId]);
    const audit = await app.deps.db.auditLogEntry.findFirstOrThrow({ where: { entityId: g.data!.createPaymentIntent.id } });
    expect(audit.actorType).toBe('MEMBER');
  });

  test('validation: 400 with the field, nothing created', async () => {
    const f = await moneyFixture(app, { minimumDeposit: 100n });
    const production = await app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, {
      body: { name: 'Prod', mode: 'PRODUCTION' },
      headers: f.member.headers,
    });
    const productionId = production.headers.get('location')!.split('/').pop()!;
    const notAuthorized = await app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, {
      body: { name: 'Other', mode: 'SANDBOX' },
      headers: f.member.headers,
    });
    const notAuthorizedId = notAuthorized.headers.get('location')!.split('/').pop()!;
    const other = await signUpMember(app);
    const foreign = await app.rest('POST', `/v1/organizations/${other.organizationId}/accounts`, {
      body: { name: 'Foreign', mode: 'SANDBOX' },
      headers: other.headers,
    });
    const foreignId = foreign.headers.get('location')!.split('/').pop()!;
    const cases: [Record<string, unknown>, string][] = [
      [{ amount: '0' }, 'amount'],
      [{ amount: '-5' }, 'amount'],
      [{ amount: '1.5' }, 'amount'],
      [{ amount: '1e6' }, 'amount'],
      [{ amount: '99' }, 'amount'],
      [{ expiresInSeconds: 59 }, 'expiresInSeconds'],
      [{ expiresInSeconds: 30 * 86400 + 1 }, 'expiresInSeconds'],
      [{ expiresInSeconds: 600, expiresAt: new Date(Date.now() + 3600_000).toISOString() }, 'expiresAt'],
      [{ expiresAt: new Date(app.clock.now().getTime() + 10_000).toISOString() }, 'expiresAt'],
      [{ assetNetworkId: crypto.randomUUID() }, 'assetNetworkId'],
      [{ assetNetworkId: 'nope' }, 'assetNetworkId'],
      [{ beneficiaryAccountId: crypto.randomUUID() }, 'beneficiaryAccountId'],
      [{ beneficiaryAccountId: foreignId }, 'beneficiaryAccountId'],
      [{ beneficiaryAccountId: productionId }, 'beneficiaryAccountId'],
      [{ beneficiaryAccountId: notAuthorizedId }, 'beneficiaryAccountId'],
      [{ payerAccountId: f.beneficiaryAccountId }, 'payerAccountId'],
      [{ reference: '' }, 'reference'],
      [{ walletId: crypto.randomUUID() }, 'walletId'],
      [{ applicationId: crypto.randomUUID() }, 'applicationId'],
      [{ metadata: { big: 'x'.repeat(9000) } }, 'metadata'],
      [{ unknownField: 1 }, 'unknownField'],
    ];
    for (const [body, field] of cases) {
      const r = await create(f, body);
      expect(r.status, `${JSON.stringify(body)}: ${r.text}`).toBe(400);
      expect(fieldOf(r), JSON.stringify(body)).toEqual([field]);
    }
    expect(await app.deps.db.paymentIntent.count({ where: { organizationId: f.organizationId } })).toBe(0);
    expect(await app.deps.db.transaction.count({ where: { organizationId: f.organizationId } })).toBe(0);
  });

  test('CreatePaymentIntent with a wallet through REST: 2 statements (31 before issue 22, then 18, then 5), the derivation index reserved before the write', async () => {
    const f = await moneyFixture(app);
    expect((await create(f, { walletId: f.walletId })).status).toBe(201);
    const { result, statements } = await app.sqlStatements(() => create(f, { walletId: f.walletId }));
    expect(result.status, result.text).toBe(201);
    // One statement reads what the checks need and reserves the wallet's index, committed on its own:
    // the wallet's row is not held until the intent commits.
    expect(statements[0]).toMatch(/^\s*WITH "input" AS [\s\S]*UPDATE "Wallet" w SET "nextAddressIndex"/);
    expect(statements.filter((s) => /"Wallet"/.test(s))).toHaveLength(1);
    // One statement, committed on its own (no webhook endpoint: nothing follows it), writes the transaction, the intent, its address,
    // the expiry job (pg-boss's own insert), the audit entries and the events.
    expect(statements[1]).toMatch(
      /INSERT INTO "Transaction"[\s\S]*INSERT INTO "PaymentIntent"[\s\S]*INSERT INTO "DepositAddress"[\s\S]*INSERT INTO pgboss\.[\s\S]*INSERT INTO "AuditLogEntry"[\s\S]*INSERT INTO "WebhookEvent"/,
    );
    // No re-read after the commit (REST selects only the id).
    expect(statements).toHaveLength(2);
    const id = result.headers.get('location')!.split('/').pop()!;
    const intent = await app.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders });
    expect(intent.body.address).toMatch(/^0x[0-9a-f]{40}$/);
    expect((await app.deps.db.depositAddress.findFirstOrThrow({ where: { paymentIntentId: id } })).derivationIndex).toBe(1);
    expect((await eventsOf(app, f.organizationId)).map((e) => e.type).slice(-3)).toEqual([
      'transaction.created',
      'payment_intent.created',
      'deposit.address_generated',
    ]);
  });

  test('concurrent creations share transactions (group commit, issue 22); a clash in a group fails alone, the others are created whole', async () => {
    const f = await moneyFixture(app);
    const n = 24;
    // Two requests for one reference: both pass the read (it is free), one is refused by the unique
    // index wherever the two land, and only it: its group is written again intent by intent.
    const bodies = Array.from({ length: n }, (_, i) => ({
      walletId: f.walletId,
      amount: String(1_000_000 + i),
      reference: i === 3 || i === 17 ? 'twice' : `ref-${i}`,
    }));
    const { result, statements } = await app.sqlStatements(() => Promise.all(bodies.map((b) => create(f, b))));
    const statuses = result.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(n - 1);
    const refused = result.filter((r) => r.status !== 201);
    expect(refused).toHaveLength(1);
    expect(refused[0]!.status, refused[0]!.text).toBe(409);
    expect(refused[0]!.body.detail ?? refused[0]!.text).toMatch(/already has a payment intent with this reference/);
    expect([result[3]!.status, result[17]!.status].sort()).toEqual([201, 409]);
    // Fewer commits than creations: groups formed.
    expect(statements.filter((s) => s === 'COMMIT').length).toBeLessThan(n);
    // Every created intent is whole: its transaction, its address (distinct indexes), its three events, its audit entries, its expiry job.
    const ids = result.filter((r) => r.status === 201).map((r) => r.headers.get('location')!.split('/').pop()!);
    const intents = await app.deps.db.paymentIntent.findMany({ where: { id: { in: ids } }, include: { transaction: { include: { participants: true } } } });
    expect(intents).toHaveLength(n - 1);
    expect(intents.every((x) => x.depositAddressId !== null && x.transaction.participants.length === 1)).toBe(true);
    const addresses = await app.deps.db.depositAddress.findMany({ where: { paymentIntentId: { in: ids } } });
    expect(new Set(addresses.map((a) => a.derivationIndex)).size).toBe(n - 1);
    expect(addresses.map((a) => a.id).sort()).toEqual(intents.map((x) => x.depositAddressId).sort());
    const events = await eventsOf(app, f.organizationId);
    for (const id of ids) expect(events.filter((e) => JSON.stringify(e).includes(id)).length).toBeGreaterThanOrEqual(2);
    expect(events.filter((e) => e.type === 'payment_intent.created')).toHaveLength(n - 1);
    expect(events.filter((e) => e.type === 'deposit.address_generated')).toHaveLength(n - 1);
    expect(await app.deps.db.auditLogEntry.count({ where: { entityId: { in: ids }, action: 'payment_intent.created' } })).toBe(n - 1);
    const [jobs] = await app.deps.db.$queryRaw<{ n: bigint }[]>`SELECT count(*) AS n FROM pgboss.job WHERE name = ${EXPIRE_QUEUE} AND id = ANY(${ids}::uuid[])`;
    expect(Number(jobs!.n)).toBe(n - 1);
    // Nothing of the refused one: one intent and one transaction per created intent only.
    expect(await app.deps.db.paymentIntent.count({ where: { organizationId: f.organizationId } })).toBe(n - 1);
    expect(await app.deps.db.transaction.count({ where: { organizationId: f.organizationId } })).toBe(n - 1);
  });

  test('concurrent creations read in groups (issue 22): the checks stay per item, a refused read fails alone, the indexes of a wallet are consecutive', async () => {
    const f = await moneyFixture(app);
    const n = 12;
    const bodies = Array.from({ length: n }, (_, i) => ({
      walletId: f.walletId,
      amount: String(2_000_000 + i),
      ...(i === 5 ? { beneficiaryAccountId: crypto.randomUUID() } : {}),
      ...(i === 8 ? { amount: '0' } : {}),
    }));
    const { result, statements } = await app.sqlStatements(() => Promise.all(bodies.map((b) => create(f, b))));
    expect(result.map((r) => r.status)).toEqual(bodies.map((_, i) => (i === 5 || i === 8 ? 400 : 201)));
    expect(fieldOf(result[5]!)).toEqual(['beneficiaryAccountId']);
    expect(fieldOf(result[8]!)).toEqual(['amount']);
    // Fewer reads than creations (those the input gate refused never read).
    const reads = statements.filter((s) => /^\s*WITH "input" AS/.test(s));
    expect(reads.length).toBeLessThan(n - 1);
    // One group reads and writes (one group in flight, the next gathering): a write per read, at most one per two creations.
    expect(statements.filter((s) => /INSERT INTO "PaymentIntent"/.test(s))).toHaveLength(reads.length);
    expect(reads.length).toBeLessThanOrEqual(n / 2);
    const ids = result.filter((r) => r.status === 201).map((r) => r.headers.get('location')!.split('/').pop()!);
    const indexes = (await app.deps.db.depositAddress.findMany({ where: { paymentIntentId: { in: ids } } }))
      .map((a) => a.derivationIndex)
      .sort((a, b) => a - b);
    expect(new Set(indexes).size).toBe(ids.length);
    // The refused read's index was reserved too (a gap, as a creation refused after its read always left one): n - 1 indexes taken.
    const wallet = await app.deps.db.wallet.findUniqueOrThrow({ where: { id: f.walletId } });
    expect(wallet.nextAddressIndex).toBe(n - 1);
  });

  test("a group's addresses, derived together, are those of the wallet's root key at each derivation index (issue 22, point 1)", async () => {
    const f = await moneyFixture(app);
    const n = 24;
    const result = await Promise.all(Array.from({ length: n }, (_, i) => create(f, { walletId: f.walletId, amount: String(5_000_000 + i) })));
    expect(result.map((r) => r.status)).toEqual(Array(n).fill(201));
    const addresses = await app.deps.db.depositAddress.findMany({ where: { walletId: f.walletId } });
    expect(addresses).toHaveLength(n);
    // Independently of the public derivation: the child private key (CKDpriv) from the custodial root, its key and address.
    const rootKey = await custodialRootKey(app.deps.db, app.deps.sealingKey, f.walletId);
    for (const a of addresses) {
      const publicKey = publicKeyOf(derivePrivateKey(rootKey, a.derivationIndex));
      expect({ publicKey: a.publicKey, address: a.address }).toEqual({ publicKey, address: addressOf(publicKey) });
    }
  });

  test('with a webhook endpoint the group is written in a transaction with its deliveries and their jobs (issue 22)', async () => {
    const f = await moneyFixture(app);
    await registerEndpoint(app, f.member, 'https://1.1.1.1/hooks');
    const n = 6;
    const { result, statements } = await app.sqlStatements(() =>
      Promise.all(Array.from({ length: n }, (_, i) => create(f, { walletId: f.walletId, amount: String(3_000_000 + i) }))),
    );
    expect(result.map((r) => r.status)).toEqual(Array(n).fill(201));
    expect(statements).toContain('BEGIN');
    expect(statements.filter((s) => s === 'COMMIT').length).toBeGreaterThan(0);
    const ids = result.map((r) => r.headers.get('location')!.split('/').pop()!);
    await expectDeliveriesAndJobs(f, ids);
  });

  test('an endpoint registered after a group read none: the autocommitted write refuses itself and the group is written in a transaction with the deliveries and their jobs (issue 22)', async () => {
    const f = await moneyFixture(app);
    const n = 5;
    // The wallet's row held by another transaction: the group's read (which reserves the indexes) waits for it
    // with its snapshot taken, from before the endpoint exists; the group's write comes after the endpoint.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let held!: () => void;
    const holding = new Promise<void>((r) => (held = r));
    const holder = app.deps.db.$transaction(
      async (tx) => {
        await tx.$queryRaw`SELECT 1 FROM "Wallet" WHERE "id" = ${f.walletId}::uuid FOR UPDATE`;
        held();
        await released;
      },
      { timeout: 60_000 },
    );
    await holding;
    const { result, statements } = await app.sqlStatements(async () => {
      const creations = Promise.all(Array.from({ length: n }, (_, i) => create(f, { walletId: f.walletId, amount: String(4_000_000 + i) })));
      for (let waiting = 0; waiting === 0;) {
        await new Promise((r) => setTimeout(r, 20));
        const [row] = await app.deps.db.$queryRaw<{ n: bigint }[]>`
          SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE "Wallet" w SET "nextAddressIndex"%'`;
        waiting = Number(row!.n);
      }
      await registerEndpoint(app, f.member, 'https://1.1.1.1/hooks');
      release();
      await holder;
      return creations;
    });
    expect(result.map((r) => r.status)).toEqual(Array(n).fill(201));
    // The read saw no endpoint; the autocommitted write found one, refused itself whole, and the group went in a transaction.
    const writes = statements.filter((s) => /INSERT INTO "PaymentIntent"/.test(s));
    expect(writes.length).toBeGreaterThanOrEqual(2);
    expect(writes[0]).toMatch(/SELECT 1 \/ \(CASE WHEN EXISTS \(SELECT 1 FROM deliveries\)/);
    expect(statements).toContain('BEGIN');
    const ids = result.map((r) => r.headers.get('location')!.split('/').pop()!);
    expect(await app.deps.db.paymentIntent.count({ where: { organizationId: f.organizationId } })).toBe(n);
    expect(await app.deps.db.transaction.count({ where: { organizationId: f.organizationId } })).toBe(n);
    expect(await app.deps.db.auditLogEntry.count({ where: { entityId: { in: ids }, action: 'payment_intent.created' } })).toBe(n);
    await expectDeliveriesAndJobs(f, ids);
  });

  test('409 in the words of the constraint that clashed: a deposit address derivation index in use is no duplicate reference (issue 22)', async () => {
    const f = await moneyFixture(app);
    expect((await create(f, { walletId: f.walletId, reference: 'first' })).status).toBe(201);
    // The wallet's counter set back (a restored backup, another process's allocation): the next index is in use.
    await app.deps.db.wallet.update({ where: { id: f.walletId }, data: { nextAddressIndex: { decrement: 1 } } });
    const clash = await create(f, { walletId: f.walletId, reference: 'second' });
    expect(clash.status, clash.text).toBe(409);
    expect(clash.body.code).toBe('CONFLICT');
    expect(JSON.stringify(clash.body)).not.toMatch(/reference/);
    expect(JSON.stringify(clash.body)).toMatch(/derivation index|deposit address was allocated/);
    // Nothing of the refused intent was kept; the reference stays free.
    expect(await app.deps.db.paymentIntent.count({ where: { organizationId: f.organizationId, reference: 'second' } })).toBe(0);
    // The duplicate reference keeps its own words.
    const dup = await create(f, { walletId: f.walletId, reference: 'first' });
    expect(dup.status).toBe(409);
    expect(JSON.stringify(dup.body)).toMatch(/already has a payment intent with this reference/);
  });

  test('409: a duplicate reference, a frozen beneficiary, a PAUSED asset-network; 404: another organization', async () => {
    const f = await moneyFixture(app);
    expect((await create(f, { reference: 'dup' })).status).toBe(201);
    const dup = await create(f, { reference: 'dup' });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('CONFLICT');
    const other = await signUpMember(app);
    const foreign = await app.rest('POST', `/v1/organizations/${other.organizationId}/payment-intents`, {
      body: { assetNetworkId: f.catalog.assetNetworkId, amount: '1', beneficiaryAccountId: f.beneficiaryAccountId },
      headers: f.apiKeyHeaders,
    });
    expect(foreign.status).toBe(404);
    await app.rest('POST', `/v1/accounts/${f.beneficiaryAccountId}/freeze`, { body: { reason: 'kyc' }, headers: f.member.headers });
    expect((await create(f, {})).status).toBe(409);
    await app.rest('POST', `/v1/accounts/${f.beneficiaryAccountId}/unfreeze`, { headers: f.member.headers });
    const paused = await app.rest('POST', `/v1/platform/asset-networks/${f.catalog.assetNetworkId}/pause`, {
      body: { reason: 'maintenance' },
      headers: f.catalog.operator.headers,
    });
    expect(paused.status).toBe(204);
    const r = await create(f, {});
    expect(r.status).toBe(409);
    expect(r.body.detail).toMatch(/PAUSED/);
  });

  test('a production key cannot pay on a sandbox network (400), and its beneficiary must be of its mode', async () => {
    const f = await moneyFixture(app);
    const prod = await createApiKey(app, f.member, 'PRODUCTION');
    const acc = await app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: 'Live' }, headers: prod.headers });
    const r = await create(f, { beneficiaryAccountId: acc.headers.get('location')!.split('/').pop() }, prod.headers);
    expect(r.status).toBe(400);
    expect(fieldOf(r)).toEqual(['assetNetworkId']);
  });

  test('Idempotency-Key: same request, same intent; another request, 409; only one transaction', async () => {
    const f = await moneyFixture(app);
    const key = { 'idempotency-key': 'pi-' + crypto.randomUUID() };
    const a = await create(f, { reference: 'idem' }, { ...f.apiKeyHeaders, ...key });
    const b = await create(f, { reference: 'idem' }, { ...f.apiKeyHeaders, ...key });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.headers.get('location')).toBe(a.headers.get('location'));
    const c = await create(f, { reference: 'idem2' }, { ...f.apiKeyHeaders, ...key });
    expect(c.status).toBe(409);
    expect(c.body.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await app.deps.db.transaction.count({ where: { organizationId: f.organizationId } })).toBe(1);
    expect((await eventsOf(app, f.organizationId)).filter((e) => e.type === 'payment_intent.created')).toHaveLength(1);
  });

  test('one creation path (issue 22): a keyed creation is the group read and its autocommitted write with the key record; a replay is the read alone; an expired key creates anew', async () => {
    const f = await moneyFixture(app);
    const key = { ...f.apiKeyHeaders, 'idempotency-key': 'pi-path-' + crypto.randomUUID() };
    const first = await app.sqlStatements(() => create(f, { walletId: f.walletId, reference: 'keyed' }, key));
    expect(first.result.status, first.result.text).toBe(201);
    // The read (wallet index, the key's record) and ONE write, the key's record inside: no transaction of its own, no advisory lock.
    expect(first.statements).toHaveLength(2);
    expect(first.statements[0]).toMatch(/^\s*WITH "input" AS [\s\S]*"IdempotencyRecord"[\s\S]*UPDATE "Wallet"/);
    expect(first.statements[1]).toMatch(/INSERT INTO "PaymentIntent"[\s\S]*INSERT INTO "IdempotencyRecord"/);
    // The read commits without waiting for its WAL flush (its own statement only); the write, which the 201 answers for, does wait.
    expect(first.statements[0]).toContain("set_config('synchronous_commit', 'off', true)");
    expect(first.statements[1]).not.toContain('synchronous_commit');
    const id = first.result.headers.get('location')!.split('/').pop()!;
    const record = await app.deps.db.idempotencyRecord.findFirstOrThrow({ where: { key: key['idempotency-key'] } });
    expect(record.response).toEqual({ id });
    expect(record.expiresAt.getTime() - record.createdAt.getTime()).toBe(24 * 3600_000);
    // A replay: the read answers it (same Location, byte for byte the same answer), nothing written.
    const replay = await app.sqlStatements(() => create(f, { walletId: f.walletId, reference: 'keyed' }, key));
    expect([replay.result.status, replay.result.headers.get('location'), replay.result.text]).toEqual([
      201,
      first.result.headers.get('location'),
      first.result.text,
    ]);
    expect(replay.statements).toHaveLength(1);
    // GraphQL replays it too (the same scope: the API key's application).
    const gql = await app.gql<{ createPaymentIntent: { id: string } }>(
      'mutation($o: ID!, $i: CreatePaymentIntentInput!, $k: String) { createPaymentIntent(organizationId: $o, input: $i, idempotencyKey: $k) { id } }',
      {
        o: f.organizationId,
        i: {
          assetNetworkId: f.catalog.assetNetworkId,
          amount: '1000000',
          beneficiaryAccountId: f.beneficiaryAccountId,
          walletId: f.walletId,
          reference: 'keyed',
        },
        k: key['idempotency-key'],
      },
      f.apiKeyHeaders,
    );
    expect(gql.data?.createPaymentIntent.id, JSON.stringify(gql.errors)).toBe(id);
    const other = await create(f, { walletId: f.walletId, reference: 'keyed-2' }, key);
    expect([other.status, other.body.code]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    // A refused creation keeps no record: the key may be used again once the request is fixed.
    const refusedKey = { ...f.apiKeyHeaders, 'idempotency-key': 'pi-refused-' + crypto.randomUUID() };
    expect((await create(f, { reference: 'keyed' }, refusedKey)).status).toBe(409);
    expect(await app.deps.db.idempotencyRecord.count({ where: { key: refusedKey['idempotency-key'] } })).toBe(0);
    expect((await create(f, { reference: 'keyed-3' }, refusedKey)).status).toBe(201);
    // 24 hours later (a second service on the database, its clock a day ahead: the shared clock stays) the record no longer
    // answers: the key is free, a request with it creates another intent, and the record is the new one.
    const dayLater = await createTestApp({ databaseUrl: app.databaseUrl, now: new Date(app.clock.now().getTime() + 24 * 3600_000 + 1000) });
    try {
      const createLater = () =>
        dayLater.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
          body: { assetNetworkId: f.catalog.assetNetworkId, amount: '1000000', beneficiaryAccountId: f.beneficiaryAccountId, reference: 'keyed-later' },
          headers: key,
        });
      const later = await createLater();
      expect(later.status, later.text).toBe(201);
      const laterId = later.headers.get('location')!.split('/').pop()!;
      expect(laterId).not.toBe(id);
      expect((await app.deps.db.idempotencyRecord.findMany({ where: { key: key['idempotency-key'] } })).map((r) => r.response)).toEqual([{ id: laterId }]);
      expect((await createLater()).headers.get('location')).toBe(later.headers.get('location'));
    } finally {
      await dayLater.close();
    }
  });

  test('one key at once (issue 22): 8 requests with one body and 4 with another in one burst, and the same key on a second service on the database: one intent, identical answers, the other body 409', async () => {
    const f = await moneyFixture(app);
    const second = await createTestApp({ databaseUrl: app.databaseUrl });
    try {
      const k = 'pi-burst-' + crypto.randomUUID();
      const headers = { ...f.apiKeyHeaders, 'idempotency-key': k };
      const body = (reference: string) => ({
        assetNetworkId: f.catalog.assetNetworkId,
        amount: '1000000',
        beneficiaryAccountId: f.beneficiaryAccountId,
        walletId: f.walletId,
        reference,
      });
      const path = `/v1/organizations/${f.organizationId}/payment-intents`;
      const reqs = [
        ...Array.from({ length: 6 }, () => ({ g: 'same', on: app, body: body('burst-a') })),
        ...Array.from({ length: 6 }, () => ({ g: 'same', on: second, body: body('burst-a') })),
        ...Array.from({ length: 2 }, () => ({ g: 'other', on: app, body: body('burst-b') })),
        ...Array.from({ length: 2 }, () => ({ g: 'other', on: second, body: body('burst-b') })),
        ...Array.from({ length: 4 }, (_, i) => ({ g: 'unkeyed', on: app, body: body(`burst-u${i}`) })),
      ];
      const answers = await Promise.all(
        reqs.map(async (x) => ({ ...x, res: await x.on.rest('POST', path, { headers: x.g === 'unkeyed' ? f.apiKeyHeaders : headers, body: x.body }) })),
      );
      const of = (g: string) => answers.filter((x) => x.g === g);
      const winner = of('same')[0]!.res.status === 201 ? 'same' : 'other';
      const loser = winner === 'same' ? 'other' : 'same';
      const won = of(winner).map((x) => `${x.res.status} ${x.res.headers.get('location')} ${x.res.text}`);
      expect(new Set(won).size, JSON.stringify(won)).toBe(1);
      expect(of(winner)[0]!.res.status).toBe(201);
      for (const x of of(loser)) expect([x.res.status, x.res.body?.code], x.res.text).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
      for (const x of of('unkeyed')) expect(x.res.status, x.res.text).toBe(201);
      const id = of(winner)[0]!.res.headers.get('location')!.split('/').pop()!;
      // One intent for the key (whole: its address, its events), one record answering it.
      expect(await app.deps.db.paymentIntent.count({ where: { organizationId: f.organizationId, reference: { in: ['burst-a', 'burst-b'] } } })).toBe(1);
      expect((await app.deps.db.idempotencyRecord.findMany({ where: { key: k } })).map((r) => r.response)).toEqual([{ id }]);
      expect(await app.deps.db.depositAddress.count({ where: { paymentIntentId: id } })).toBe(1);
      expect((await eventsOf(app, f.organizationId)).filter((e) => e.type === 'payment_intent.created')).toHaveLength(5);
      // Another organization's identical key is its own (its scope names its application).
      const g = await moneyFixture(app);
      const mine = await create(g, { reference: 'burst-a' }, { ...g.apiKeyHeaders, 'idempotency-key': k });
      expect(mine.status, mine.text).toBe(201);
      expect(mine.headers.get('location')).not.toBe(of(winner)[0]!.res.headers.get('location'));
    } finally {
      await second.close();
    }
  });

  test('release rules go through the same group (issue 22): a burst of rule-bearing, keyed and plain creations, one rule refused, each answered as alone', async () => {
    const f = await moneyFixture(app);
    const rule = { milestones: [{ amount: '400000' }, { amount: '600000', conditions: [{ kind: 'APPROVAL', party: 'INTEGRATOR' }] }] };
    const bodies = Array.from({ length: 12 }, (_, i) => ({
      walletId: f.walletId,
      reference: `rule-${i}`,
      ...(i % 3 === 0 ? { releaseRule: rule } : {}),
      ...(i === 4 ? { releaseRuleTemplateId: crypto.randomUUID() } : {}),
    }));
    const result = await Promise.all(
      bodies.map((b, i) => create(f, b, i % 2 ? { ...f.apiKeyHeaders, 'idempotency-key': `rule-${i}-${f.organizationId}` } : f.apiKeyHeaders)),
    );
    expect(result.map((r) => r.status)).toEqual(bodies.map((_, i) => (i === 4 ? 400 : 201)));
    expect(fieldOf(result[4]!)).toEqual(['releaseRuleTemplateId']);
    for (const [i, r] of result.entries()) {
      if (i === 4) continue;
      const id = r.headers.get('location')!.split('/').pop()!;
      const intent = await app.deps.db.paymentIntent.findUniqueOrThrow({ where: { id }, include: { transaction: { include: { milestones: true } } } });
      expect(intent.transaction.milestones.map((m) => m.amount.toString()).sort(), `creation ${i}`).toEqual(i % 3 === 0 ? ['400000', '600000'] : []);
      const audits = await app.deps.db.auditLogEntry.findMany({ where: { entityId: intent.transactionId }, orderBy: { id: 'asc' } });
      expect(audits.map((a) => a.action)).toEqual(i % 3 === 0 ? ['transaction.created', 'transaction.release_rule_set'] : ['transaction.created']);
    }
    expect(await app.deps.db.idempotencyRecord.count({ where: { key: { startsWith: 'rule-' }, scope: { contains: f.organizationId } } })).toBe(6);
    expect(await app.deps.db.transaction.count({ where: { organizationId: f.organizationId } })).toBe(11);
  });

  test('reads: the organization’s members and the key’s environment; another organization reads 404; no credential 401', async () => {
    const f = await moneyFixture(app);
    const pi = await createIntent(app, f);
    const other = await signUpMember(app);
    expect((await app.rest('GET', `/v1/payment-intents/${pi.id}`, { headers: other.headers })).status).toBe(404);
    expect((await app.rest('GET', `/v1/payment-intents/${pi.id}`, { headers: f.member.headers })).status).toBe(200);
    expect((await app.rest('GET', `/v1/payment-intents/${pi.id}`)).status).toBe(401);
    expect((await app.rest('POST', `/v1/payment-intents/${pi.id}/cancel`, { headers: other.headers })).status).toBe(404);
  });
});

describe('cancel', () => {
  test('AWAITING_PAYMENT -> CANCELLED with its transaction: payment_intent.cancelled, transaction.cancelled (Reason); then 409', async () => {
    const f = await moneyFixture(app);
    const pi = await createIntent(app, f);
    const from = (await eventsOf(app, f.organizationId)).length;
    const r = await app.rest('POST', `/v1/payment-intents/${pi.id}/cancel`, { body: { reason: 'customer left' }, headers: f.apiKeyHeaders });
    expect(r.status, r.text).toBe(204);
    const got = await app.rest('GET', `/v1/payment-intents/${pi.id}`, { headers: f.apiKeyHeaders });
    expect(got.body).toMatchObject({ status: 'CANCELLED' });
    expect(got.body.cancelledAt).toBeTruthy();
    const t = await app.rest('GET', `/v1/transactions/${pi.transactionId}`, { headers: f.apiKeyHeaders });
    expect(t.body).toMatchObject({ status: 'CANCELLED', cancelReason: 'customer left' });
    const events = (await eventsOf(app, f.organizationId)).slice(from);
    expect(events).toEqual([
      { type: 'payment_intent.cancelled', body: { PaymentIntentId: pi.id } },
      { type: 'transaction.cancelled', body: { TransactionId: pi.transactionId, Reason: 'customer left' } },
    ]);
    expect((await app.rest('POST', `/v1/payment-intents/${pi.id}/cancel`, { headers: f.apiKeyHeaders })).status).toBe(409);
    expect(await sweepExpiries(app, f.organizationId)).toBe(0);
  });

  test('refused once a deposit was detected, and after expiry', async () => {
    const f = await moneyFixture(app);
    const pi = await createIntent(app, f);
    await sandboxSend(app, f.apiKeyHeaders, { address: pi.address, amount: 10n, assetNetworkId: f.catalog.assetNetworkId });
    await drainChainSync(app);
    const r = await app.rest('POST', `/v1/payment-intents/${pi.id}/cancel`, { headers: f.apiKeyHeaders });
    expect(r.status).toBe(409);
    expect(r.body.detail).toMatch(/PROCESSING/);
    const pi2 = await createIntent(app, f, { expiresInSeconds: 60 });
    await sandboxAdvanceClock(app, f.apiKeyHeaders, 61);
    // Not swept yet: the cancel materializes the expiry, and is refused.
    const c = await app.rest('POST', `/v1/payment-intents/${pi2.id}/cancel`, { headers: f.apiKeyHeaders });
    expect(c.status).toBe(409);
    expect((await app.rest('GET', `/v1/payment-intents/${pi2.id}`, { headers: f.apiKeyHeaders })).body.status).toBe('EXPIRED');
  });
});

describe('expiry', () => {
  test('the expiry job of an intent that SUCCEEDED or was cancelled reads its status once and changes nothing (no transaction)', async () => {
    const f = await moneyFixture(app, { requiredConfirmations: 1 });
    const paid = await createIntent(app, f, { expiresInSeconds: 120 });
    const cancelled = await createIntent(app, f, { expiresInSeconds: 120 });
    const due = await createIntent(app, f, { expiresInSeconds: 120 });
    await sandboxSend(app, f.apiKeyHeaders, { address: paid.address, amount: 1_000_000n, assetNetworkId: f.catalog.assetNetworkId });
    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainChainSync(app);
    expect((await app.rest('GET', `/v1/payment-intents/${paid.id}`, { headers: f.apiKeyHeaders })).body.status).toBe('SUCCEEDED');
    expect((await app.rest('POST', `/v1/payment-intents/${cancelled.id}/cancel`, { headers: f.apiKeyHeaders })).status).toBe(204);
    await sandboxAdvanceClock(app, f.apiKeyHeaders, 121);
    for (const pi of [paid, cancelled]) {
      const { result, statements } = await app.sqlStatements(() => expireIfDue(moneyDeps(app), pi.id));
      expect(result).toBe(false);
      expect(statements).toHaveLength(1);
    }
    expect(await expireIfDue(moneyDeps(app), 'not-an-id')).toBe(false);
    expect((await app.rest('GET', `/v1/payment-intents/${paid.id}`, { headers: f.apiKeyHeaders })).body.status).toBe('SUCCEEDED');
    expect((await app.rest('GET', `/v1/payment-intents/${cancelled.id}`, { headers: f.apiKeyHeaders })).body.status).toBe('CANCELLED');
    // A live one past its time still takes the locked path and expires.
    const live = await app.sqlStatements(() => expireIfDue(moneyDeps(app), due.id));
    expect(live.result).toBe(true);
    expect(live.statements.length).toBeGreaterThan(3);
  });

  test('the expiry job does nothing before ExpiresAt, expires after it (by the sandbox clock); the sweep expires the rest', async () => {
    const f = await moneyFixture(app);
    const a = await createIntent(app, f, { expiresInSeconds: 120 });
    const b = await createIntent(app, f, { expiresInSeconds: 120 });
    const c = await createIntent(app, f, { expiresInSeconds: 3600 });
    expect(await expireIfDue(moneyDeps(app), a.id)).toBe(false);
    const advanced = await sandboxAdvanceClock(app, f.apiKeyHeaders, 121);
    // The advance queued an expiry sweep of the organization in its own transaction.
    const sweeps = await app.deps.db.$queryRaw<
      { n: bigint }[]
    >`SELECT count(*) AS n FROM pgboss.job WHERE name = ${EXPIRE_SWEEP_QUEUE} AND data->>'organizationId' = ${f.organizationId}`;
    expect(sweeps[0]!.n).toBe(1n);
    const from = (await eventsOf(app, f.organizationId)).length;
    expect(await expireIfDue(moneyDeps(app), a.id)).toBe(true);
    expect(await expireIfDue(moneyDeps(app), a.id)).toBe(false);
    expect(await sweepExpiries(app, f.organizationId)).toBe(1);
    const got = await app.rest('GET', `/v1/payment-intents/${a.id}`, { headers: f.apiKeyHeaders });
    expect(got.body).toMatchObject({ status: 'EXPIRED' });
    expect(new Date(got.body.expiredAt).getTime()).toBeGreaterThanOrEqual(new Date(advanced.now).getTime() - 1000);
    expect((await app.rest('GET', `/v1/payment-intents/${b.id}`, { headers: f.apiKeyHeaders })).body.status).toBe('EXPIRED');
    expect((await app.rest('GET', `/v1/payment-intents/${c.id}`, { headers: f.apiKeyHeaders })).body.status).toBe('AWAITING_PAYMENT');
    expect((await app.rest('GET', `/v1/transactions/${a.transactionId}`, { headers: f.apiKeyHeaders })).body.status).toBe('EXPIRED');
    const events = (await eventsOf(app, f.organizationId)).slice(from);
    expect(events).toEqual([
      { type: 'payment_intent.expired', body: { PaymentIntentId: a.id } },
      { type: 'payment_intent.expired', body: { PaymentIntentId: b.id } },
    ]);
    const audit = await app.deps.db.auditLogEntry.findMany({
      where: { entityId: { in: [a.id, a.transactionId] }, action: { in: ['payment_intent.expired', 'transaction.expired'] } },
    });
    expect(audit.map((x) => x.actorType)).toEqual(['SYSTEM', 'SYSTEM']);
  });

  test("a sandbox intent lives by the organization's sandbox clock; a production intent by the real clock only", async () => {
    const f = await moneyFixture(app);
    await sandboxAdvanceClock(app, f.apiKeyHeaders, 7200);
    const pi = await createIntent(app, f, { expiresInSeconds: 3600 });
    // Created by the sandbox clock (two hours ahead): it expires an hour of sandbox time later, not at once.
    expect(await sweepExpiries(app, f.organizationId)).toBe(0);
    // A production catalog and key of the same organization.
    const op = f.catalog.operator.headers;
    const tag = Date.now() % 1_000_000;
    const asset = await app.rest('POST', '/v1/platform/assets', { headers: op, body: { code: `LIV${tag}`, name: 'Live', decimals: 6 } });
    const network = await app.rest('POST', '/v1/platform/networks', {
      headers: op,
      body: { name: `Live ${tag}`, kind: 'EVM', environmentType: 'PRODUCTION', blockTimeSeconds: 12, requiredConfirmations: 12 },
    });
    const an = await app.rest('POST', '/v1/platform/asset-networks', {
      headers: op,
      body: {
        assetId: asset.headers.get('location')!.split('/').pop(),
        networkId: network.headers.get('location')!.split('/').pop(),
        decimals: 6,
        contractReference: '0x' + 'cd'.repeat(20),
        minimumDeposit: '1',
      },
    });
    expect(an.status, an.text).toBe(201);
    const anId = an.headers.get('location')!.split('/').pop()!;
    expect((await app.rest('POST', `/v1/platform/asset-networks/${anId}/enable`, { headers: op })).status).toBe(204);
    const prod = await createApiKey(app, f.member, 'PRODUCTION');
    const acc = await app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { body: { name: 'Live' }, headers: prod.headers });
    const live = await app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
      body: { assetNetworkId: anId, amount: '5', beneficiaryAccountId: acc.headers.get('location')!.split('/').pop(), expiresInSeconds: 600 },
      headers: prod.headers,
    });
    expect(live.status, live.text).toBe(201);
    const liveId = live.headers.get('location')!.split('/').pop()!;
    const got = await app.rest('GET', `/v1/payment-intents/${liveId}`, { headers: prod.headers });
    expect(new Date(got.body.expiresAt).getTime()).toBe(app.clock.now().getTime() + 600_000);
    await sandboxAdvanceClock(app, f.apiKeyHeaders, 3600);
    // The sandbox intent is due by the sandbox clock; the production one is not due by the real clock.
    expect(await sweepExpiries(app, f.organizationId)).toBe(1);
    expect((await app.rest('GET', `/v1/payment-intents/${pi.id}`, { headers: f.apiKeyHeaders })).body.status).toBe('EXPIRED');
    expect((await app.rest('GET', `/v1/payment-intents/${liveId}`, { headers: prod.headers })).body.status).toBe('AWAITING_PAYMENT');
    const started = app.clock.now();
    app.clock.set(new Date(started.getTime() + 601_000));
    try {
      expect(await sweepExpiries(app, f.organizationId)).toBe(1);
      expect((await app.rest('GET', `/v1/payment-intents/${liveId}`, { headers: prod.headers })).body.status).toBe('EXPIRED');
    } finally {
      app.clock.set(started);
    }
  });

  test('the jobs: the expiry job and an on-demand sweep run their real handlers; a scheduled sweep has no data', async () => {
    const f = await moneyFixture(app);
    const a = await createIntent(app, f, { expiresInSeconds: 60 });
    const b = await createIntent(app, f, { expiresInSeconds: 60 });
    await sandboxAdvanceClock(app, f.apiKeyHeaders, 61);
    const boss = app.deps.boss!;
    // The expiry job of `a`, as the worker gets it.
    const jobs = await boss.fetch<ExpireJob>(EXPIRE_QUEUE, { batchSize: 500, ignoreStartAfter: true });
    const mine = jobs.filter((j) => j.data.paymentIntentId === a.id);
    expect(mine).toHaveLength(1);
    expect(await expireIfDue(moneyDeps(app), mine[0]!.data.paymentIntentId)).toBe(true);
    await boss.complete(
      EXPIRE_QUEUE,
      jobs.map((j) => j.id),
    );
    // The clock advance queued an on-demand sweep for the organization (other tests' sweeps may be queued too).
    const sweeps = await boss.fetch<ExpirySweepJob>(EXPIRE_SWEEP_QUEUE, { batchSize: 500 });
    const ours = sweeps.filter((j) => j.data?.organizationId === f.organizationId);
    expect(ours.map((j) => j.data)).toEqual([{ organizationId: f.organizationId }]);
    expect(await runExpirySweepJob(moneyDeps(app), ours[0]!.data)).toBe(1);
    await boss.complete(
      EXPIRE_SWEEP_QUEUE,
      sweeps.map((j) => j.id),
    );
    expect((await app.rest('GET', `/v1/payment-intents/${b.id}`, { headers: f.apiKeyHeaders })).body.status).toBe('EXPIRED');
    // pg-boss schedules send no data.
    expect(await runExpirySweepJob(moneyDeps(app), null)).toBe(0);
  });
});
