import { randomBytes } from 'node:crypto';
import { describe, expect, test } from 'vitest';
import { bearer, createApiKey, PASSWORD, uniqueEmail, type RestResult } from './harness';
import { sandboxMine, sandboxSend } from './money-helpers';
import { eventsOf, moneyFixture, type MoneyFixture } from './fixtures/deposits/testing';
import { drainMoneyWork } from './fixtures/settlements/testing';
import { drainDeliveries, registerEndpoint, startReceiver } from './webhook-helpers';
import {
  app,
  attack,
  auditOf,
  expectOwnAudit,
  gqlVia,
  hostileBodies,
  idOf,
  norm,
  op,
  remember,
  secrets,
  send,
  shuffle,
  TWO_256,
  useAttackApp,
  wt,
  DEST,
  type AuditEntry,
  type Req,
} from './attack-kit';

/**
 * Attacks on the group-committed write paths (creations: accounts, payment intents, sandbox sends; the money paths are in attack-groups-money.test.ts) (issue 22, point 5: "nothing weaker"), from outside:
 * REST and GraphQL only, as a client, a fuzzer and an attacker would send them. Account creation,
 * payment intents, sandbox sends and withdrawal requests are written several clients' requests to
 * one transaction; settlements are executed in groups by their job. Each attack fires a burst of
 * concurrent requests (so they land in one group) mixing two organizations' valid requests, hostile
 * bodies, business refusals, tenant-crossing requests and Idempotency-Key replays, and checks that
 * every refused request answers exactly what it answers when sent alone, that every valid one
 * succeeds, and that what was written is exactly the accepted requests' (resources, audit entries,
 * events, balances, ledger and sandbox invariants), with no 500 and no credential in any log line.
 */
useAttackApp();

// ------------------------------------------------------------------------------------------------

describe('REST account creation in groups', () => {
  test('a burst of two organizations\u2019 creations, hostile bodies, tenant crossings and reference clashes: each answered as alone, exactly the accepted ones written', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const pathA = `/v1/organizations/${a.organizationId}/accounts`;
    const pathB = `/v1/organizations/${b.organizationId}/accounts`;
    const taken = `ref-${randomBytes(4).toString('hex')}`;
    const existing = await app.rest('POST', pathA, { headers: a.apiKeyHeaders, body: { name: 'Existing', reference: taken } });
    expect(existing.status, existing.text).toBe(201);
    const listed = async (org: string, headers: Record<string, string>) =>
      ((await app.rest('GET', `/v1/organizations/${org}/accounts?limit=200`, { headers })).body as { id: string }[]).map((x) => x.id);
    const beforeA = await listed(a.organizationId, a.member.headers);
    const beforeB = await listed(b.organizationId, b.member.headers);

    const base = { name: 'Burst account' };
    const clash = `clash-${randomBytes(4).toString('hex')}`;
    const reqs: Req[] = [
      ...Array.from({ length: 10 }, (_, i): Req => ({
        label: `A valid ${i}`,
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { name: `A ${i}`, reference: `a-${i}-${clash}` },
        kind: 'ok',
      })),
      ...Array.from({ length: 4 }, (_, i): Req => ({
        label: `A member valid ${i}`,
        path: pathA,
        headers: a.member.headers,
        body: { name: `A m ${i}` },
        kind: 'ok',
      })),
      ...Array.from({ length: 8 }, (_, i): Req => ({
        label: `B valid ${i}`,
        path: pathB,
        headers: b.apiKeyHeaders,
        body: { name: `B ${i}`, reference: `b-${i}-${clash}` },
        kind: 'ok',
      })),
      // Tenant crossings: A's credentials on B's organization.
      { label: "A's key on B's organization", path: pathB, headers: a.apiKeyHeaders, body: base, kind: 'refused' },
      { label: "A's member on B's organization", path: pathB, headers: a.member.headers, body: base, kind: 'refused' },
      { label: 'no credential', path: pathA, headers: {}, body: base, kind: 'refused' },
      // Business refusals.
      { label: 'reference taken', path: pathA, headers: a.apiKeyHeaders, body: { name: 'Dup', reference: taken }, kind: 'refused' },
      {
        label: 'unknown holder',
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { name: 'H', accountHolderId: '00000000-0000-7000-8000-000000000001' },
        kind: 'refused',
      },
      // B's taken reference is free in A: B's reference used by A succeeds (ok), A's taken one in B succeeds too.
      { label: "A's taken reference in B", path: pathB, headers: b.apiKeyHeaders, body: { name: 'B has it free', reference: taken }, kind: 'ok' },
      ...hostileBodies({ name: 'Hostile', reference: 'r' }, { textField: 'name', requiredField: 'name', idField: 'accountHolderId' }).map((h): Req => ({
        label: `hostile ${h.label}`,
        path: pathA,
        headers: a.apiKeyHeaders,
        body: h.body,
        raw: h.raw,
        kind: 'refused',
      })),
    ];
    // Two requests with one new reference in the burst: one wins, the other is the 409 of a taken reference.
    const twins: Req[] = [0, 1].map((i) => ({
      label: `twin ${i}`,
      path: pathA,
      headers: a.apiKeyHeaders,
      body: { name: `Twin ${i}`, reference: `twin-${clash}` },
      kind: 'ok',
    }));
    const [answers, twinAnswers, gqlAnswers] = await Promise.all([
      attack(reqs),
      Promise.all(twins.map(send)),
      Promise.all(
        [0, 1, 2].map((i) =>
          gqlVia(
            'mutation($o: ID!, $i: CreateAccountInput!) { createAccount(organizationId: $o, input: $i) { id name } }',
            { o: a.organizationId, i: { name: `A gql ${i}` } },
            a.apiKeyHeaders,
          ),
        ),
      ),
    ]);
    expect(twinAnswers.map((t) => t.status).sort()).toEqual([201, 409]);
    const lost = twinAnswers.find((t) => t.status === 409)!;
    const refTaken = norm(
      await send({ label: 'dup', path: pathA, headers: a.apiKeyHeaders, body: { name: 'Dup', reference: `twin-${clash}` }, kind: 'refused' }),
    );
    expect(norm(lost)).toEqual(refTaken);
    for (const g of gqlAnswers) expect(g.errors, JSON.stringify(g.errors)).toBeUndefined();

    const created = (org: string) => [...answers.entries()].filter(([r, res]) => res.status === 201 && r.path.includes(org)).map(([, res]) => idOf(res));
    const createdA = [
      ...created(a.organizationId),
      ...twinAnswers.filter((t) => t.status === 201).map(idOf),
      ...gqlAnswers.map((g) => (g.data as any).createAccount.id),
    ];
    const createdB = created(b.organizationId);
    expect(createdA).toHaveLength(10 + 4 + 1 + 3);
    expect(createdB).toHaveLength(8 + 1);
    // Exactly the accepted ones exist, each in its own organization only.
    expect((await listed(a.organizationId, a.member.headers)).sort()).toEqual([...beforeA, ...createdA].sort());
    expect((await listed(b.organizationId, b.member.headers)).sort()).toEqual([...beforeB, ...createdB].sort());
    const byKeyA = [...answers.entries()].filter(([r]) => r.label.startsWith('A valid')).map(([, res]) => idOf(res));
    for (const id of byKeyA.slice(0, 4)) {
      expect((await app.rest('GET', `/v1/accounts/${id}`, { headers: a.apiKeyHeaders })).status).toBe(200);
      expect((await app.rest('GET', `/v1/accounts/${id}`, { headers: b.apiKeyHeaders })).status).toBe(404);
    }
    // One audit entry per accepted creation, with its own request id, organization and caller.
    for (const id of [...createdA, ...createdB]) expect(await auditOf(id), id).toHaveLength(1);
    const actors = new Map<string, string>();
    for (const [r, res] of answers) {
      if (res.status !== 201) continue;
      const org = r.path === pathA ? a.organizationId : b.organizationId;
      const member = r.headers === a.member.headers;
      const e = await expectOwnAudit(
        idOf(res),
        res,
        { organizationId: org, actorType: member ? 'MEMBER' : 'API_KEY', actorId: member ? a.member.memberId : undefined },
        'account.created',
      );
      expect(e.after).toMatchObject({ name: (r.body as { name: string }).name });
      const who = `${org} ${member}`;
      expect(actors.get(who) ?? e.actorId, who).toBe(e.actorId);
      actors.set(who, e.actorId);
    }
    expect(new Set(actors.values()).size).toBe(3);
  });

  test('Idempotency-Key: one key sent 8 times at once (one account, identical answers), with two bodies (one wins, the others 409), across bursts, and shared by two organizations (no collision)', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const pathA = `/v1/organizations/${a.organizationId}/accounts`;
    const pathB = `/v1/organizations/${b.organizationId}/accounts`;
    const key = `k-${randomBytes(6).toString('hex')}`;
    const key2 = `k2-${randomBytes(6).toString('hex')}`;
    const same = (i: number): Req => ({
      label: `A same ${i}`,
      path: pathA,
      headers: { ...a.apiKeyHeaders, 'idempotency-key': key },
      body: { name: 'Keyed' },
      kind: 'ok',
    });
    const sameB = (i: number): Req => ({
      label: `B same ${i}`,
      path: pathB,
      headers: { ...b.apiKeyHeaders, 'idempotency-key': key },
      body: { name: 'Keyed' },
      kind: 'ok',
    });
    const two = (i: number): Req => ({
      label: `A two bodies ${i}`,
      path: pathA,
      headers: { ...a.apiKeyHeaders, 'idempotency-key': key2 },
      body: { name: i % 2 ? 'Odd' : 'Even' },
      kind: 'ok',
    });
    const unkeyed = (i: number): Req => ({ label: `A unkeyed ${i}`, path: pathA, headers: a.apiKeyHeaders, body: { name: `U ${i}` }, kind: 'ok' });
    const reqs = [
      ...Array.from({ length: 8 }, (_, i) => same(i)),
      ...Array.from({ length: 6 }, (_, i) => sameB(i)),
      ...Array.from({ length: 8 }, (_, i) => two(i)),
      ...Array.from({ length: 8 }, (_, i) => unkeyed(i)),
    ];
    const answers = await Promise.all(shuffle(reqs).map(async (r) => [r, await send(r)] as const));
    const of = (p: string) => answers.filter(([r]) => r.label.startsWith(p)).map(([, res]) => res);
    const sameAnswers = of('A same');
    expect(
      new Set(sameAnswers.map((r) => JSON.stringify([r.status, r.headers.get('location'), r.text]))).size,
      JSON.stringify(sameAnswers.map((r) => r.status)),
    ).toBe(1);
    expect(sameAnswers[0]!.status).toBe(201);
    const bAnswers = of('B same');
    expect(new Set(bAnswers.map((r) => JSON.stringify([r.status, r.headers.get('location')]))).size).toBe(1);
    expect(bAnswers[0]!.status).toBe(201);
    expect(idOf(bAnswers[0]!)).not.toBe(idOf(sameAnswers[0]!));
    // Two bodies on one key: every request of the winning body answers the same account, the others 409.
    const twoAnswers = answers.filter(([r]) => r.label.startsWith('A two'));
    const winners = twoAnswers.filter(([, res]) => res.status === 201);
    expect(winners.length).toBeGreaterThan(0);
    const winningName = (winners[0]![0].body as { name: string }).name;
    for (const [r, res] of twoAnswers) {
      if ((r.body as { name: string }).name === winningName)
        expect([res.status, res.headers.get('location')]).toEqual([201, winners[0]![1].headers.get('location')]);
      else expect([res.status, res.body.code], res.text).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    }
    for (const res of of('A unkeyed')) expect(res.status, res.text).toBe(201);
    // Across bursts: the same key answers the same account again.
    const again = await Promise.all([0, 1, 2].map((i) => send(same(i))));
    for (const r of again) expect([r.status, r.headers.get('location')]).toEqual([201, sameAnswers[0]!.headers.get('location')]);
    // What exists: one account per key and organization, the 8 unkeyed ones.
    const names = (
      (await app.rest('GET', `/v1/organizations/${a.organizationId}/accounts?limit=200`, { headers: a.member.headers })).body as { name: string }[]
    ).map((x) => x.name);
    expect(names.filter((n) => n === 'Keyed')).toHaveLength(1);
    expect(names.filter((n) => n === 'Odd' || n === 'Even')).toHaveLength(1);
    expect(names.filter((n) => n.startsWith('U '))).toHaveLength(8);
    const namesB = (
      (await app.rest('GET', `/v1/organizations/${b.organizationId}/accounts?limit=200`, { headers: b.member.headers })).body as { name: string }[]
    ).map((x) => x.name);
    expect(namesB.filter((n) => n === 'Keyed')).toHaveLength(1);
    expect(await auditOf(idOf(sameAnswers[0]!))).toHaveLength(1);
  });
});

// ------------------------------------------------------------------------------------------------

describe('payment intents in groups', () => {
  test('a burst of two organizations\u2019 intents, hostile bodies, foreign accounts/wallets/asset-networks, a frozen beneficiary and reference clashes: each answered as alone, exactly the accepted ones written', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const pathA = `/v1/organizations/${a.organizationId}/payment-intents`;
    const pathB = `/v1/organizations/${b.organizationId}/payment-intents`;
    const baseA = { assetNetworkId: a.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: a.beneficiaryAccountId, walletId: a.walletId };
    const baseB = { assetNetworkId: b.catalog.assetNetworkId, amount: '2000', beneficiaryAccountId: b.beneficiaryAccountId, walletId: b.walletId };
    const taken = `pi-${randomBytes(4).toString('hex')}`;
    const first = await app.rest('POST', pathA, { headers: a.apiKeyHeaders, body: { ...baseA, reference: taken } });
    expect(first.status, first.text).toBe(201);
    // A frozen beneficiary of A's.
    const frozen = await app.rest('POST', `/v1/organizations/${a.organizationId}/accounts`, { headers: a.apiKeyHeaders, body: { name: 'Frozen' } });
    expect(frozen.status).toBe(201);
    expect((await app.rest('POST', `/v1/accounts/${idOf(frozen)}/freeze`, { headers: a.member.headers, body: { reason: 'attack' } })).status).toBe(204);
    const eventsBefore = async (org: string) => (await eventsOf(app, org)).filter((e) => e.type === 'payment_intent.created').length;
    const [evA0, evB0] = [await eventsBefore(a.organizationId), await eventsBefore(b.organizationId)];

    const clash = randomBytes(4).toString('hex');
    const reqs: Req[] = [
      ...Array.from({ length: 10 }, (_, i): Req => ({
        label: `A valid ${i}`,
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { ...baseA, reference: `a-${i}-${clash}` },
        kind: 'ok',
      })),
      ...Array.from({ length: 8 }, (_, i): Req => ({
        label: `B valid ${i}`,
        path: pathB,
        headers: b.apiKeyHeaders,
        body: { ...baseB, metadata: { i } },
        kind: 'ok',
      })),
      { label: 'A amount 2^256-1', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, amount: (TWO_256 - 1n).toString() }, kind: 'ok' },
      { label: 'A without a wallet', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, walletId: undefined }, kind: 'ok' },
      // Tenant crossings.
      { label: "A's key on B's organization", path: pathB, headers: a.apiKeyHeaders, body: baseB, kind: 'refused' },
      {
        label: "A's member on B's organization",
        path: pathB,
        headers: a.member.headers,
        body: { ...baseB, applicationId: b.applicationId, environmentId: b.environmentId },
        kind: 'refused',
      },
      { label: "B's beneficiary", path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, beneficiaryAccountId: b.beneficiaryAccountId }, kind: 'refused' },
      { label: "B's payer account", path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, payerAccountId: b.beneficiaryAccountId }, kind: 'refused' },
      { label: "B's wallet", path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, walletId: b.walletId }, kind: 'refused' },
      {
        label: "B's asset-network with A's wallet",
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { ...baseA, assetNetworkId: b.catalog.assetNetworkId },
        kind: 'refused',
      },
      {
        label: "A's member naming B's environment",
        path: pathA,
        headers: a.member.headers,
        body: { ...baseA, applicationId: b.applicationId, environmentId: b.environmentId },
        kind: 'refused',
      },
      // Business refusals.
      { label: 'reference taken', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, reference: taken }, kind: 'refused' },
      { label: 'frozen beneficiary', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, beneficiaryAccountId: idOf(frozen) }, kind: 'refused' },
      { label: 'expires too soon', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, expiresInSeconds: 10 }, kind: 'refused' },
      {
        label: 'expired already',
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { ...baseA, expiresAt: new Date(Date.now() - 3_600_000).toISOString() },
        kind: 'refused',
      },
      { label: 'metadata over 8 KiB', path: pathA, headers: a.apiKeyHeaders, body: { ...baseA, metadata: { x: 'y'.repeat(9000) } }, kind: 'refused' },
      {
        label: 'unknown asset-network',
        path: pathA,
        headers: a.apiKeyHeaders,
        body: { ...baseA, assetNetworkId: '00000000-0000-7000-8000-0000000000aa' },
        kind: 'refused',
      },
      ...hostileBodies(
        { ...baseA, reference: 'hostile' },
        { amountField: 'amount', textField: 'reference', requiredField: 'beneficiaryAccountId', idField: 'walletId' },
      ).map((h): Req => ({ label: `hostile ${h.label}`, path: pathA, headers: a.apiKeyHeaders, body: h.body, raw: h.raw, kind: 'refused' })),
    ];
    const twins = [0, 1].map((i): Req => ({
      label: `twin ${i}`,
      path: pathA,
      headers: a.apiKeyHeaders,
      body: { ...baseA, reference: `twin-${clash}` },
      kind: 'ok',
    }));
    // Hostile GraphQL variables in the same burst: refused by the input gate (never 500), nothing written.
    const gqlHostile = [
      { ...baseB, amount: 1000 },
      { ...baseB, amount: TWO_256.toString() },
      { ...baseB, reference: 'a\u0000b' },
      { ...baseB, beneficiaryAccountId: a.beneficiaryAccountId },
    ];
    const [answers, twinAnswers, gqlAnswers, gqlRefused] = await Promise.all([
      attack(reqs),
      Promise.all(twins.map(send)),
      Promise.all(
        [0, 1].map(() =>
          gqlVia(
            'mutation($o: ID!, $i: CreatePaymentIntentInput!) { createPaymentIntent(organizationId: $o, input: $i) { id address } }',
            { o: b.organizationId, i: baseB },
            b.apiKeyHeaders,
          ),
        ),
      ),
      Promise.all(
        gqlHostile.map((i) =>
          gqlVia(
            'mutation($o: ID!, $i: CreatePaymentIntentInput!) { createPaymentIntent(organizationId: $o, input: $i) { id } }',
            { o: b.organizationId, i },
            b.apiKeyHeaders,
          ),
        ),
      ),
    ]);
    expect(gqlRefused.map((g) => [g.data?.createPaymentIntent ?? null, g.errors?.[0]?.extensions?.code])).toEqual([
      [null, 'VALIDATION_FAILED'],
      [null, 'VALIDATION_FAILED'],
      [null, 'VALIDATION_FAILED'],
      [null, [...answers.entries()].find(([r]) => r.label === "B's beneficiary")![1].body.code],
    ]);
    expect(twinAnswers.map((t) => t.status).sort()).toEqual([201, 409]);
    expect(norm(twinAnswers.find((t) => t.status === 409)!)).toEqual(norm(await send({ ...twins[0]! })));
    for (const g of gqlAnswers) expect(g.errors, JSON.stringify(g.errors)).toBeUndefined();

    const accepted = (org: string) => [...answers.entries()].filter(([r, res]) => res.status === 201 && r.path.includes(org)).map(([, res]) => idOf(res));
    const idsA = [...accepted(a.organizationId), idOf(twinAnswers.find((t) => t.status === 201)!)];
    const idsB = [...accepted(b.organizationId), ...gqlAnswers.map((g) => (g.data as any).createPaymentIntent.id as string)];
    expect(idsA).toHaveLength(10 + 2 + 1);
    expect(idsB).toHaveLength(8 + 2);
    // Each accepted intent whole: its transaction, its own address (from its own wallet), its event; invisible to the other organization.
    const addresses = new Set<string>();
    for (const [ids, f, other] of [
      [idsA, a, b],
      [idsB, b, a],
    ] as const) {
      for (const id of ids) {
        const got = await app.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders });
        expect(got.status, got.text).toBe(200);
        expect(got.body).toMatchObject({ organizationId: f.organizationId, status: 'AWAITING_PAYMENT', beneficiaryAccountId: f.beneficiaryAccountId });
        if (got.body.address) addresses.add(got.body.address);
        expect((await app.rest('GET', `/v1/transactions/${got.body.transactionId}`, { headers: f.apiKeyHeaders })).status).toBe(200);
        expect((await app.rest('GET', `/v1/payment-intents/${id}`, { headers: other.apiKeyHeaders })).status).toBe(404);
      }
    }
    expect(addresses.size).toBe(idsA.length + idsB.length - 1); // one was created without a wallet
    // Exactly one payment_intent.created per accepted intent, none for a refused one.
    const created = async (org: string) => (await eventsOf(app, org)).filter((e) => e.type === 'payment_intent.created').map((e) => e.body.PaymentIntentId);
    expect((await created(a.organizationId)).slice(evA0).sort()).toEqual([...idsA].sort());
    expect((await created(b.organizationId)).slice(evB0).sort()).toEqual([...idsB].sort());
    for (const [r, res] of answers) {
      if (res.status !== 201) continue;
      const e = await expectOwnAudit(
        idOf(res),
        res,
        { organizationId: r.path === pathA ? a.organizationId : b.organizationId, actorType: 'API_KEY' },
        'payment_intent.created',
      );
      expect(e.after).toMatchObject({ amount: (r.body as { amount: string }).amount });
    }
  });

  test('Idempotency-Key on intents: one key 8 times at once, two bodies on one key, the same key in two organizations, and again in a later burst', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const pathA = `/v1/organizations/${a.organizationId}/payment-intents`;
    const pathB = `/v1/organizations/${b.organizationId}/payment-intents`;
    const baseA = { assetNetworkId: a.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: a.beneficiaryAccountId, walletId: a.walletId };
    const baseB = { assetNetworkId: b.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: b.beneficiaryAccountId, walletId: b.walletId };
    const key = `pk-${randomBytes(6).toString('hex')}`;
    const key2 = `pk2-${randomBytes(6).toString('hex')}`;
    const reqs: [string, Req][] = [
      ...Array.from({ length: 8 }, (_, i): [string, Req] => [
        'A same',
        { label: `A same ${i}`, path: pathA, headers: { ...a.apiKeyHeaders, 'idempotency-key': key }, body: baseA, kind: 'ok' },
      ]),
      ...Array.from({ length: 4 }, (_, i): [string, Req] => [
        'B same',
        { label: `B same ${i}`, path: pathB, headers: { ...b.apiKeyHeaders, 'idempotency-key': key }, body: baseB, kind: 'ok' },
      ]),
      ...Array.from({ length: 8 }, (_, i): [string, Req] => [
        'A two',
        {
          label: `A two ${i}`,
          path: pathA,
          headers: { ...a.apiKeyHeaders, 'idempotency-key': key2 },
          body: { ...baseA, amount: String(100 + (i % 2)) },
          kind: 'ok',
        },
      ]),
      ...Array.from({ length: 8 }, (_, i): [string, Req] => [
        'A unkeyed',
        { label: `A unkeyed ${i}`, path: pathA, headers: a.apiKeyHeaders, body: baseA, kind: 'ok' },
      ]),
    ];
    const answers = await Promise.all(shuffle(reqs).map(async ([g, r]) => ({ g, r, res: await send(r) })));
    const of = (g: string) => answers.filter((x) => x.g === g);
    for (const g of ['A same', 'B same']) {
      const xs = of(g);
      expect(
        new Set(xs.map((x) => JSON.stringify([x.res.status, x.res.headers.get('location'), x.res.text]))).size,
        g + JSON.stringify(xs.map((x) => x.res.text)),
      ).toBe(1);
      expect(xs[0]!.res.status).toBe(201);
    }
    expect(idOf(of('A same')[0]!.res)).not.toBe(idOf(of('B same')[0]!.res));
    const two = of('A two');
    const won = two.find((x) => x.res.status === 201)!;
    expect(won, JSON.stringify(two.map((x) => x.res.text))).toBeDefined();
    for (const x of two) {
      if ((x.r.body as { amount: string }).amount === (won.r.body as { amount: string }).amount)
        expect([x.res.status, x.res.headers.get('location')]).toEqual([201, won.res.headers.get('location')]);
      else expect([x.res.status, x.res.body?.code], x.res.text).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    }
    for (const x of of('A unkeyed')) expect(x.res.status, x.res.text).toBe(201);
    const again = await Promise.all(
      of('A same')
        .slice(0, 3)
        .map((x) => send(x.r)),
    );
    for (const r of again) expect([r.status, r.headers.get('location')]).toEqual([201, of('A same')[0]!.res.headers.get('location')]);
    const created = (await eventsOf(app, a.organizationId)).filter((e) => e.type === 'payment_intent.created').map((e) => e.body.PaymentIntentId);
    expect(created).toHaveLength(1 + 1 + 8);
    expect(new Set(created).size).toBe(created.length);
  });
});

// ------------------------------------------------------------------------------------------------

describe('sandbox sends in groups', () => {
  test('a burst of two organizations\u2019 sends, hostile bodies, a production key, an unknown asset-network and sends past the 2^256 \u2212 1 bound: each answered as alone; what was accepted is mined exactly once', async () => {
    const a = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const b = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const intentOf = async (f: MoneyFixture) => {
      const r = await app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
        headers: f.apiKeyHeaders,
        body: { assetNetworkId: f.catalog.assetNetworkId, amount: '1000000', beneficiaryAccountId: f.beneficiaryAccountId, walletId: f.walletId },
      });
      expect(r.status, r.text).toBe(201);
      return (await app.rest('GET', `/v1/payment-intents/${idOf(r)}`, { headers: f.apiKeyHeaders })).body as {
        id: string;
        address: string;
        transactionId: string;
      };
    };
    const [ia, ib] = [await intentOf(a), await intentOf(b)];
    const prod = await createApiKey(app, a.member, 'PRODUCTION');
    secrets.add(prod.key);
    // An address already awaiting 2^256 - 1: any further send to it is past the bound.
    const full = `0x${randomBytes(20).toString('hex')}`;
    await sandboxSend(app, a.apiKeyHeaders, { address: full, amount: TWO_256 - 1n, assetNetworkId: a.catalog.assetNetworkId });
    const path = '/v1/sandbox/deposits';
    const sendA = (amount: string) => ({ address: ia.address, amount, assetNetworkId: a.catalog.assetNetworkId });
    const reqs: Req[] = [
      ...Array.from({ length: 10 }, (_, i): Req => ({ label: `A valid ${i}`, path, headers: a.apiKeyHeaders, body: sendA(String(100_000 + i)), kind: 'ok' })),
      ...Array.from({ length: 8 }, (_, i): Req => ({
        label: `B valid ${i}`,
        path,
        headers: b.apiKeyHeaders,
        body: { address: ib.address, amount: String(125_000), assetNetworkId: b.catalog.assetNetworkId },
        kind: 'ok',
      })),
      // B pays A's address: allowed (a public chain), and must not disturb A's.
      { label: 'B pays A', path, headers: b.apiKeyHeaders, body: sendA('7'), kind: 'ok' },
      { label: 'production key', path, headers: prod.headers, body: sendA('1'), kind: 'refused' },
      {
        label: 'unknown asset-network',
        path,
        headers: a.apiKeyHeaders,
        body: { ...sendA('1'), assetNetworkId: '00000000-0000-7000-8000-0000000000ab' },
        kind: 'refused',
      },
      ...[0, 1, 2].map((i): Req => ({
        label: `past the bound ${i}`,
        path,
        headers: i === 1 ? b.apiKeyHeaders : a.apiKeyHeaders,
        body: { address: full, amount: '1', assetNetworkId: a.catalog.assetNetworkId },
        kind: 'refused',
      })),
      {
        label: 'past the bound alone',
        path,
        headers: a.apiKeyHeaders,
        body: { address: `0x${'0'.repeat(39)}1`, amount: (TWO_256 - 1n).toString(), assetNetworkId: a.catalog.assetNetworkId, revert: 'no' },
        kind: 'refused',
      },
      { label: 'address too short', path, headers: a.apiKeyHeaders, body: { ...sendA('1'), address: '0x1234' }, kind: 'refused' },
      { label: 'replaceable a string', path, headers: a.apiKeyHeaders, body: { ...sendA('1'), replaceable: 'yes' }, kind: 'refused' },
      ...hostileBodies(sendA('1'), { amountField: 'amount', textField: 'address', requiredField: 'address', idField: 'assetNetworkId' }).map((h): Req => ({
        label: `hostile ${h.label}`,
        path,
        headers: a.apiKeyHeaders,
        body: h.body,
        raw: h.raw,
        kind: 'refused',
      })),
    ];
    const [answers, gqlAnswers] = await Promise.all([
      attack(reqs),
      Promise.all(
        [0, 1].map(() =>
          gqlVia(
            'mutation($i: SandboxDepositInput!) { sandboxSendDeposit(input: $i) { txHash status } }',
            { i: { address: ib.address, amount: '3', assetNetworkId: b.catalog.assetNetworkId } },
            b.apiKeyHeaders,
          ),
        ),
      ),
    ]);
    for (const g of gqlAnswers) expect(g.errors, JSON.stringify(g.errors)).toBeUndefined();
    const hashes = [...answers.entries()].filter(([, r]) => r.status === 201).map(([, r]) => r.body.txHash as string);
    hashes.push(...gqlAnswers.map((g) => (g.data as any).sandboxSendDeposit.txHash as string));
    expect(hashes).toHaveLength(10 + 8 + 1 + 2);
    expect(new Set(hashes).size).toBe(hashes.length);
    for (const [r, res] of answers)
      if (res.status === 201) expect(res.body, r.label).toEqual({ txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), status: 'PENDING' });

    // Each send's audit entry carries its own request id and its sender's organization.
    for (const f of [a, b]) {
      const r = await app.rest('GET', `/v1/admin/audit-log?organizationId=${f.organizationId}&actionType=sandbox.transaction_sent&take=500`, {
        headers: op.headers,
      });
      const entries = r.body.items as AuditEntry[];
      for (const [q, res] of answers) {
        if (res.status !== 201 || q.headers !== f.apiKeyHeaders) continue;
        const mine = entries.filter((e) => e.after?.txHash === res.body.txHash);
        expect(mine, q.label).toHaveLength(1);
        expect(mine[0]!.requestId, q.label).toBe(res.headers.get('x-request-id'));
        expect(mine[0]!.after, q.label).toMatchObject({ amount: (q.body as { amount: string }).amount, address: (q.body as { address: string }).address });
      }
    }
    await sandboxMine(app, a.apiKeyHeaders, a.catalog.networkId, 1);
    await sandboxMine(app, b.apiKeyHeaders, b.catalog.networkId, 1);
    await drainMoneyWork(app);
    const balance = async (assetNetworkId: string, address: string, headers: Record<string, string>) => {
      const r = await app.gql<{ sandboxBalance: { balance: string } }>(
        'query($a: String!, $n: ID!) { sandboxBalance(address: $a, assetNetworkId: $n) { balance } }',
        { a: address, n: assetNetworkId },
        headers,
      );
      expect(r.errors, JSON.stringify(r.errors)).toBeUndefined();
      return BigInt(r.data!.sandboxBalance.balance);
    };
    const sumA = Array.from({ length: 10 }, (_, i) => BigInt(100_000 + i)).reduce((x, y) => x + y) + 7n;
    expect(await balance(a.catalog.assetNetworkId, ia.address, a.apiKeyHeaders)).toBe(sumA);
    expect(await balance(b.catalog.assetNetworkId, ib.address, b.apiKeyHeaders)).toBe(8n * 125_000n + 6n);
    expect(await balance(a.catalog.assetNetworkId, full, a.apiKeyHeaders)).toBe(TWO_256 - 1n);
    // The intents saw exactly what was sent to them.
    const got = (id: string, f: MoneyFixture) => app.rest('GET', `/v1/payment-intents/${id}`, { headers: f.apiKeyHeaders });
    expect((await got(ia.id, a)).body.confirmedAmount).toBe(sumA.toString());
    expect((await got(ib.id, b)).body.confirmedAmount).toBe((8n * 125_000n + 6n).toString());
  });

  test('Idempotency-Key on sends: one key 8 times at once sends once with identical answers; another body on the key 409; two organizations\u2019 identical keys do not collide', async () => {
    const a = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const b = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const to = `0x${randomBytes(20).toString('hex')}`;
    const key = `sk-${randomBytes(6).toString('hex')}`;
    const body = (amount: string) => ({ address: to, amount, assetNetworkId: a.catalog.assetNetworkId });
    const reqs = [
      ...Array.from({ length: 8 }, () => ({ g: 'A same', h: { ...a.apiKeyHeaders, 'idempotency-key': key }, body: body('11') })),
      ...Array.from({ length: 4 }, () => ({ g: 'A other', h: { ...a.apiKeyHeaders, 'idempotency-key': key }, body: body('12') })),
      ...Array.from({ length: 4 }, () => ({ g: 'B same', h: { ...b.apiKeyHeaders, 'idempotency-key': key }, body: body('11') })),
      ...Array.from({ length: 8 }, () => ({ g: 'A unkeyed', h: a.apiKeyHeaders, body: body('1') })),
    ];
    const answers = await Promise.all(
      shuffle(reqs).map(async (x) => ({ ...x, res: await app.rest('POST', '/v1/sandbox/deposits', { headers: x.h, body: x.body }) })),
    );
    const of = (g: string) => answers.filter((x) => x.g === g);
    const winner = of('A same')[0]!.res.status === 201 ? 'A same' : 'A other';
    const loser = winner === 'A same' ? 'A other' : 'A same';
    expect(new Set(of(winner).map((x) => `${x.res.status} ${x.res.text}`)).size, JSON.stringify(of(winner).map((x) => x.res.text))).toBe(1);
    expect(of(winner)[0]!.res.status).toBe(201);
    for (const x of of(loser)) expect([x.res.status, x.res.body?.code], x.res.text).toEqual([409, 'IDEMPOTENCY_KEY_REUSED']);
    expect(new Set(of('B same').map((x) => `${x.res.status} ${x.res.text}`)).size).toBe(1);
    expect(of('B same')[0]!.res.body.txHash).not.toBe(of(winner)[0]!.res.body.txHash);
    for (const x of of('A unkeyed')) expect(x.res.status, x.res.text).toBe(201);
    await sandboxMine(app, a.apiKeyHeaders, a.catalog.networkId, 1);
    const r = await app.gql<{ sandboxBalance: { balance: string } }>(
      'query($a: String!, $n: ID!) { sandboxBalance(address: $a, assetNetworkId: $n) { balance } }',
      { a: to, n: a.catalog.assetNetworkId },
      a.apiKeyHeaders,
    );
    expect(r.data!.sandboxBalance.balance).toBe(String((winner === 'A same' ? 11n : 12n) + 11n + 8n));
    await drainMoneyWork(app);
  });
});

describe('harder attacks on the creation groups', () => {
  test('sends to one address spelled in upper and lower case in one group: the 2^256 \u2212 1 bound holds for the address, whatever its spelling', async () => {
    const f = remember(await moneyFixture(app, { requiredConfirmations: 1 }));
    const hex = randomBytes(20).toString('hex').replace(/[0-9]/, 'a');
    const spellings = [`0x${hex}`, `0x${hex.toUpperCase()}`, `0x${hex.slice(0, 20).toUpperCase()}${hex.slice(20)}`, `0X${hex}`];
    const answers = await Promise.all(
      spellings.flatMap((address) =>
        [0, 1].map(() =>
          app.rest('POST', '/v1/sandbox/deposits', {
            headers: f.apiKeyHeaders,
            body: { address, amount: (TWO_256 - 1n).toString(), assetNetworkId: f.catalog.assetNetworkId },
          }),
        ),
      ),
    );
    for (const r of answers) expect(r.status, r.text).toBeLessThan(500);
    expect(
      answers.filter((r) => r.status === 201),
      JSON.stringify(answers.map((r) => r.status)),
    ).toHaveLength(1);
    await sandboxMine(app, f.apiKeyHeaders, f.catalog.networkId, 1);
    await drainMoneyWork(app);
  });

  test('GraphQL: several aliased creations in one document, one of them refused, beside a REST burst: the REST burst unaffected, the document stops at the refused one', async () => {
    const f = remember(await moneyFixture(app));
    const base = { assetNetworkId: f.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: f.beneficiaryAccountId, walletId: f.walletId };
    const ref = `g-${randomBytes(4).toString('hex')}`;
    expect(
      (await app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, { headers: f.apiKeyHeaders, body: { ...base, reference: ref } })).status,
    ).toBe(201);
    const doc = `mutation($o: ID!, $ok: CreatePaymentIntentInput!, $bad: CreatePaymentIntentInput!, $acc: CreateAccountInput!) {
      p1: createPaymentIntent(organizationId: $o, input: $ok) { id }
      p2: createPaymentIntent(organizationId: $o, input: $bad) { id }
      p3: createPaymentIntent(organizationId: $o, input: $ok) { id }
      a1: createAccount(organizationId: $o, input: $acc) { id }
    }`;
    const rest = Array.from({ length: 8 }, () =>
      app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, { headers: f.apiKeyHeaders, body: base }),
    );
    const [g, ...restAnswers] = await Promise.all([
      app.gql<Record<string, { id: string } | null>>(
        doc,
        { o: f.organizationId, ok: base, bad: { ...base, reference: ref }, acc: { name: 'G' } },
        f.apiKeyHeaders,
      ),
      ...rest,
    ]);
    for (const r of restAnswers) expect(r.status, r.text).toBe(201);
    expect(g.errors?.map((e) => e.extensions?.code)).toEqual(['CONFLICT']);
    expect(g.errors?.[0]?.message).toBe(
      norm(await app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, { headers: f.apiKeyHeaders, body: { ...base, reference: ref } }))
        .body.detail,
    );
    // The root fields are non-null: the refused one nulls `data` and stops the serial execution
    // (GraphQL's rule): p1 ran and committed, p3 and a1 never ran. Nothing of p2 exists.
    expect(g.data).toBeNull();
    const names = (
      (await app.rest('GET', `/v1/organizations/${f.organizationId}/accounts?limit=200`, { headers: f.member.headers })).body as { name: string }[]
    ).map((x) => x.name);
    expect(names.filter((n) => n === 'G')).toHaveLength(0);
    const created = (await eventsOf(app, f.organizationId)).filter((e) => e.type === 'payment_intent.created');
    expect(created).toHaveLength(1 + 8 + 1);
  });

  test('metadata with awkward keys and values: a group writes it byte for byte, as a creation alone does; a __proto__ key is refused alone, not dropped', async () => {
    const f = remember(await moneyFixture(app));
    const body = (metadata: unknown) => ({
      assetNetworkId: f.catalog.assetNetworkId,
      amount: '1000',
      beneficiaryAccountId: f.beneficiaryAccountId,
      walletId: f.walletId,
      metadata,
    });
    const metadatas: Record<string, unknown>[] = [
      { constructor: 'c', toString: 'x', 'emoji 🦊': '🦊', '\u2028': 'line separator', big: 12345678901234, neg: -0.5, nested: [1, { a: [null, true] }] },
      { '': '', ' ': ' ', quote: '"\'`', backslash: '\\', unicode: '\u00e9\u0301 \uD83D\uDE00', tab: 'a\tb', crlf: 'a\r\nb' },
      { sql: '\'); DROP TABLE "Account"; --', dollar: '$1 $$ $tag$', percent: '%s %d', json: '{"a":1}', array: '{1,2}', cast: '::jsonb' },
    ];
    const path = `/v1/organizations/${f.organizationId}/payment-intents`;
    // __proto__ as an own key of the JSON text (an object literal would set the prototype instead).
    const proto = JSON.stringify(body({ a: 1 })).replace('"a":1', '"__proto__":{"polluted":true},"a":1');
    const protoReq: Req = { label: '__proto__ key', path, headers: f.apiKeyHeaders, raw: proto, kind: 'refused' };
    const reqs: Req[] = [
      ...[0, 1, 2].flatMap((round) =>
        metadatas.map((m, i): Req => ({ label: `metadata ${i} (${round})`, path, headers: f.apiKeyHeaders, body: body(m), kind: 'ok' })),
      ),
      protoReq,
    ];
    const answers = await attack(reqs);
    for (const [r, res] of answers) {
      if (r.kind !== 'ok') continue;
      const got = await app.rest('GET', `/v1/payment-intents/${idOf(res)}`, { headers: f.apiKeyHeaders });
      expect(got.body.metadata, r.label).toEqual((r.body as { metadata: unknown }).metadata);
    }
    expect(answers.get(protoReq)!.body.errors).toEqual([{ field: 'metadata', message: 'A key named __proto__ is not accepted.', code: 'invalid_format' }]);
    // Not grouped (an Idempotency-Key): the same metadata, the same answer.
    for (const [i, m] of metadatas.entries()) {
      const keyed = await app.rest('POST', path, { headers: { ...f.apiKeyHeaders, 'idempotency-key': `meta-${i}` }, body: body(m) });
      expect(keyed.status, keyed.text).toBe(201);
      expect((await app.rest('GET', `/v1/payment-intents/${idOf(keyed)}`, { headers: f.apiKeyHeaders })).body.metadata).toEqual(m);
    }
  });
});

describe('a webhook endpoint registered while a group of intents is written', () => {
  test('every delivery the burst made is delivered (none stranded without its job); the organization without an endpoint gets none', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const receiver = await startReceiver();
    try {
      const intent = (f: MoneyFixture) =>
        app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
          headers: f.apiKeyHeaders,
          body: { assetNetworkId: f.catalog.assetNetworkId, amount: '1000', beneficiaryAccountId: f.beneficiaryAccountId, walletId: f.walletId },
        });
      const burst = (n: number) => Array.from({ length: n }, (_, i) => intent(i % 3 === 2 ? b : a));
      // Groups before, during and after the endpoint's registration.
      const first = burst(24);
      const endpoint = registerEndpoint(app, a.member, receiver.url);
      const second = burst(24);
      const [endpointId, answers] = await Promise.all([endpoint.then((e) => e.id), Promise.all([...first, ...second])]);
      const late = await Promise.all(burst(12));
      for (const r of [...answers, ...late]) expect(r.status, r.text).toBe(201);
      await drainDeliveries(app);
      const deliveries = (await app.rest('GET', `/v1/webhook-endpoints/${endpointId}/deliveries?limit=500`, { headers: a.member.headers })).body as {
        id: string;
        status: string;
      }[];
      // At least the late burst's three events per intent (transaction, intent, address) of A's 8 intents.
      expect(deliveries.length).toBeGreaterThanOrEqual(8 * 3);
      expect(
        deliveries.filter((d) => d.status !== 'DELIVERED'),
        JSON.stringify(deliveries.map((d) => d.status)),
      ).toEqual([]);
      expect(receiver.received).toHaveLength(deliveries.length);
      // Nothing of B's reached A's endpoint.
      for (const r of receiver.received) expect(r.body.includes(b.organizationId) || r.body.includes(b.beneficiaryAccountId), r.body).toBe(false);
    } finally {
      await receiver.close();
    }
  });
});

describe('cross-tenant pairings inside one group', () => {
  test('account holders: each organization’s holder accepted in its own organization and refused in the other, in one burst, as alone', async () => {
    const a = remember(await moneyFixture(app));
    const b = remember(await moneyFixture(app));
    const holderOf = async (f: MoneyFixture) => {
      const email = uniqueEmail('holder');
      const h = await app.rest('POST', '/v1/account-holders/signup', { body: { email, password: PASSWORD, name: 'Holder' } });
      expect(h.status, h.text).toBe(200);
      secrets.add(h.body.accessToken);
      const inv = await app.rest('POST', `/v1/organizations/${f.organizationId}/account-holder-invitations`, { body: { email }, headers: f.member.headers });
      expect(inv.status, inv.text).toBe(201);
      secrets.add(inv.body.token);
      const c = await app.rest('POST', '/v1/account-holders/invitations/claim', { body: { token: inv.body.token }, headers: bearer(h.body.accessToken) });
      expect(c.status, c.text).toBe(200);
      return { id: h.body.accountHolderId as string, headers: bearer(h.body.accessToken) };
    };
    const [ha, hb] = [await holderOf(a), await holderOf(b)];
    const pathOf = (f: MoneyFixture) => `/v1/organizations/${f.organizationId}/accounts`;
    const reqs: Req[] = [
      ...Array.from({ length: 6 }, (_, i): Req => ({
        label: `A with A's holder ${i}`,
        path: pathOf(a),
        headers: a.apiKeyHeaders,
        body: { name: `HA ${i}`, accountHolderId: ha.id },
        kind: 'ok',
      })),
      ...Array.from({ length: 6 }, (_, i): Req => ({
        label: `B with B's holder ${i}`,
        path: pathOf(b),
        headers: b.member.headers,
        body: { name: `HB ${i}`, accountHolderId: hb.id },
        kind: 'ok',
      })),
      ...Array.from({ length: 3 }, (_, i): Req => ({
        label: `A with B's holder ${i}`,
        path: pathOf(a),
        headers: a.apiKeyHeaders,
        body: { name: `X ${i}`, accountHolderId: hb.id },
        kind: 'refused',
      })),
      ...Array.from({ length: 3 }, (_, i): Req => ({
        label: `B with A's holder ${i}`,
        path: pathOf(b),
        headers: b.member.headers,
        body: { name: `Y ${i}`, accountHolderId: ha.id },
        kind: 'refused',
      })),
      ...Array.from({ length: 4 }, (_, i): Req => ({
        label: `A without holder ${i}`,
        path: pathOf(a),
        headers: a.member.headers,
        body: { name: `N ${i}` },
        kind: 'ok',
      })),
    ];
    const answers = await attack(reqs);
    // Each holder sees exactly its own organization's accounts made for it.
    const seen = async (h: { headers: Record<string, string> }) =>
      ((await app.rest('GET', '/v1/account-holders/me', { headers: h.headers })).body.accounts as { id: string; name: string }[]).map((x) => x.name).sort();
    expect(await seen(ha)).toEqual(Array.from({ length: 6 }, (_, i) => `HA ${i}`).sort());
    expect(await seen(hb)).toEqual(Array.from({ length: 6 }, (_, i) => `HB ${i}`).sort());
    for (const [r, res] of answers) {
      if (res.status !== 201) continue;
      const got = await app.rest('GET', `/v1/accounts/${idOf(res)}`, { headers: r.path === pathOf(a) ? a.member.headers : b.member.headers });
      expect(got.body, r.label).toMatchObject({
        name: (r.body as { name: string }).name,
        accountHolderId: (r.body as { accountHolderId?: string }).accountHolderId ?? null,
      });
    }
  });
});

describe('the bursts do land in groups', () => {
  test('16 concurrent requests of each path cost far fewer statements than 16 requests one at a time', async () => {
    const s = await wt.setup(1_000_000n);
    remember(s.f);
    const f = s.f;
    const an = f.catalog.assetNetworkId;
    const calls: Record<string, () => Promise<RestResult>> = {
      account: () => app.rest('POST', `/v1/organizations/${f.organizationId}/accounts`, { headers: f.apiKeyHeaders, body: { name: 'g' } }),
      intent: () =>
        app.rest('POST', `/v1/organizations/${f.organizationId}/payment-intents`, {
          headers: f.apiKeyHeaders,
          body: { assetNetworkId: an, amount: '1000', beneficiaryAccountId: s.accountId, walletId: f.walletId },
        }),
      send: () => app.rest('POST', '/v1/sandbox/deposits', { headers: f.apiKeyHeaders, body: { address: DEST, amount: '1', assetNetworkId: an } }),
      withdrawal: () =>
        app.rest('POST', `/v1/accounts/${s.accountId}/withdrawals`, {
          headers: f.apiKeyHeaders,
          body: { amount: '10', assetNetworkId: an, withdrawalDestinationId: s.destinationId },
        }),
    };
    for (const [name, call] of Object.entries(calls)) {
      const alone = await app.sqlStatements(async () => {
        for (let i = 0; i < 4; i++) expect((await call()).status).toBe(201);
      });
      const burst = await app.sqlStatements(async () => {
        for (const r of await Promise.all(Array.from({ length: 16 }, call))) expect(r.status, r.text).toBe(201);
      });
      const perAlone = alone.statements.length / 4;
      expect(burst.statements.length, `${name}: ${perAlone} statements alone, ${burst.statements.length} for 16 at once`).toBeLessThan(16 * perAlone * 0.6);
    }
    await drainMoneyWork(app);
  });
});
