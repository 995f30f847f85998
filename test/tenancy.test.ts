import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { apiKey, createApiKey, createTestApp, signUpMember, type RestResult, type TestApp } from './harness';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

type Member = Awaited<ReturnType<typeof signUpMember>>;
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

function expectProblem(r: RestResult, status: number, code: string) {
  expect(r.status, r.text).toBe(status);
  expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(r.body).toMatchObject({ status, code, type: expect.stringMatching(/^\/problems\//), title: expect.any(String) });
  expect(r.body.requestId).toBe(r.headers.get('x-request-id'));
}

/**
 * What a key gets from a member-only route of its own organization: 403 PRINCIPAL_NOT_ALLOWED
 * proves the key authenticated (it was refused only for being a key), 401 that it was refused.
 */
async function keyOutcome(m: Member, key: string): Promise<string> {
  const r = await app.rest('GET', `/v1/organizations/${m.organizationId}/applications`, { headers: apiKey(key) });
  return `${r.status} ${r.body?.code}`;
}
const AUTHENTICATED = '403 PRINCIPAL_NOT_ALLOWED';
const REFUSED = '401 INVALID_CREDENTIAL';
const INACTIVE = '403 APPLICATION_INACTIVE';

/** The one audit entry of `action` on `entityId`, checked against the request that made it. */
async function expectAudit(r: RestResult, m: Member, e: { entityType: string; entityId: string; action: string }) {
  const rows = await app.deps.db.auditLogEntry.findMany({ where: { entityId: e.entityId, action: e.action } });
  expect(rows, `audit entries ${e.action} of ${e.entityId}`).toHaveLength(1);
  const row = rows[0]!;
  expect(row).toMatchObject({
    actorType: 'MEMBER',
    actorId: m.memberId,
    organizationId: m.organizationId,
    entityType: e.entityType,
    entityId: e.entityId,
    action: e.action,
  });
  expect(row.requestId).toBeTruthy();
  expect(row.requestId).toBe(r.headers.get('x-request-id'));
  return row;
}

/** Rows written by one transaction share their xmin: proves the audit entry committed with the change. */
async function xminOf(table: string, id: string): Promise<string> {
  const rows = await app.deps.db.$queryRawUnsafe<{ xmin: string }[]>(`SELECT xmin::text AS xmin FROM "${table}" WHERE id = $1::uuid`, id);
  expect(rows).toHaveLength(1);
  return rows[0]!.xmin;
}

/** The fields a 400's field errors name. */
function fieldsOf(r: RestResult): string[] {
  expectProblem(r, 400, 'VALIDATION_FAILED');
  return (r.body.errors as { field: string }[]).map((e) => e.field);
}

const createApp = (m: Member, name = 'App') => app.rest('POST', `/v1/organizations/${m.organizationId}/applications`, { body: { name }, headers: m.headers });
const createEnv = (m: Member, applicationId: string, type: 'SANDBOX' | 'PRODUCTION') =>
  app.rest('POST', `/v1/applications/${applicationId}/environments`, { body: { type }, headers: m.headers });
const generate = (m: Member, environmentId: string) => app.rest('POST', `/v1/environments/${environmentId}/api-keys`, { headers: m.headers });

describe('applications', () => {
  test('create 201 with Location; get and list; an audit entry in the same transaction', async () => {
    const m = await signUpMember(app);
    const r = await createApp(m, 'Payments backend');
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({
      id: expect.stringMatching(uuid),
      organizationId: m.organizationId,
      name: 'Payments backend',
      status: 'ACTIVE',
      statusReason: null,
    });
    expect(r.headers.get('location')).toBe(`/v1/applications/${r.body.id}`);
    const row = await expectAudit(r, m, { entityType: 'Application', entityId: r.body.id, action: 'application.created' });
    expect(await xminOf('AuditLogEntry', row.id)).toBe(await xminOf('Application', r.body.id));

    const got = await app.rest('GET', `/v1/applications/${r.body.id}`, { headers: m.headers });
    expect(got.status, got.text).toBe(200);
    expect(got.body).toEqual(r.body);
    const list = await app.rest('GET', `/v1/organizations/${m.organizationId}/applications`, { headers: m.headers });
    expect(list.status).toBe(200);
    expect(list.body).toEqual([r.body]);
  });

  test('400 for a missing or empty name', async () => {
    const m = await signUpMember(app);
    expectProblem(
      await app.rest('POST', `/v1/organizations/${m.organizationId}/applications`, { body: { name: '  ' }, headers: m.headers }),
      400,
      'VALIDATION_FAILED',
    );
    expectProblem(await app.rest('POST', `/v1/organizations/${m.organizationId}/applications`, { body: {}, headers: m.headers }), 400, 'VALIDATION_FAILED');
    expect(await app.deps.db.application.count({ where: { organizationId: m.organizationId } })).toBe(0);
  });

  test("another organization's applications answer 404, exactly like missing ones", async () => {
    const a = await signUpMember(app);
    const b = await signUpMember(app);
    const created = await createApp(a);
    expectProblem(await app.rest('GET', `/v1/applications/${created.body.id}`, { headers: b.headers }), 404, 'NOT_FOUND');
    expectProblem(await app.rest('GET', `/v1/applications/${crypto.randomUUID()}`, { headers: b.headers }), 404, 'NOT_FOUND');
    expectProblem(await app.rest('GET', `/v1/organizations/${a.organizationId}/applications`, { headers: b.headers }), 404, 'NOT_FOUND');
    expectProblem(await app.rest('POST', `/v1/organizations/${a.organizationId}/applications`, { body: { name: 'x' }, headers: b.headers }), 404, 'NOT_FOUND');
    expectProblem(await createEnv(b, created.body.id, 'SANDBOX'), 404, 'NOT_FOUND');
    expectProblem(await app.rest('POST', `/v1/applications/${created.body.id}/suspend`, { body: { reason: 'x' }, headers: b.headers }), 404, 'NOT_FOUND');
    expect(await app.deps.db.application.count({ where: { organizationId: a.organizationId } })).toBe(1);
  });

  test('a path id that is not a UUID answers 404', async () => {
    const m = await signUpMember(app);
    expectProblem(await app.rest('GET', '/v1/applications/not-a-uuid', { headers: m.headers }), 404, 'NOT_FOUND');
  });
});

describe('environments', () => {
  test('201 CreatedResourceResponse; a second environment of the same type is 409; list', async () => {
    const m = await signUpMember(app);
    const a = await createApp(m);
    const sandbox = await createEnv(m, a.body.id, 'SANDBOX');
    expect(sandbox.status, sandbox.text).toBe(201);
    expect(sandbox.body).toEqual({ id: expect.stringMatching(uuid) });
    const row = await expectAudit(sandbox, m, { entityType: 'Environment', entityId: sandbox.body.id, action: 'environment.created' });
    expect(await xminOf('AuditLogEntry', row.id)).toBe(await xminOf('Environment', sandbox.body.id));

    expectProblem(await createEnv(m, a.body.id, 'SANDBOX'), 409, 'CONFLICT');
    const production = await createEnv(m, a.body.id, 'PRODUCTION');
    expect(production.status, production.text).toBe(201);
    expectProblem(await createEnv(m, a.body.id, 'PRODUCTION'), 409, 'CONFLICT');

    const list = await app.rest('GET', `/v1/applications/${a.body.id}/environments`, { headers: m.headers });
    expect(list.status).toBe(200);
    expect(list.body.map((e: { type: string }) => e.type).sort()).toEqual(['PRODUCTION', 'SANDBOX']);
    for (const e of list.body) expect(e).toMatchObject({ organizationId: m.organizationId, applicationId: a.body.id, name: expect.any(String) });
    expect(await app.deps.db.environment.count({ where: { applicationId: a.body.id } })).toBe(2);
  });

  test('the list pages like every list: limit, after, Link rel="next"; a bad limit or cursor is 400', async () => {
    const m = await signUpMember(app);
    const a = await createApp(m);
    const ids = [(await createEnv(m, a.body.id, 'SANDBOX')).body.id, (await createEnv(m, a.body.id, 'PRODUCTION')).body.id].sort();
    const base = `/v1/applications/${a.body.id}/environments`;
    const first = await app.rest('GET', `${base}?limit=1`, { headers: m.headers });
    expect(first.status, first.text).toBe(200);
    expect(first.body.map((e: { id: string }) => e.id)).toEqual([ids[0]]);
    expect(first.headers.get('link')).toBe(`<${base}?limit=1&after=${ids[0]}>; rel="next"`);
    const second = await app.rest('GET', `${base}?limit=1&after=${ids[0]}`, { headers: m.headers });
    expect(second.body.map((e: { id: string }) => e.id)).toEqual([ids[1]]);
    expect(second.headers.get('link')).toBeNull();
    expect((await app.rest('GET', base, { headers: m.headers })).headers.get('link')).toBeNull();
    expect(fieldsOf(await app.rest('GET', `${base}?limit=0`, { headers: m.headers }))).toEqual(['limit']);
    expect(fieldsOf(await app.rest('GET', `${base}?after=nope`, { headers: m.headers }))).toEqual(['after']);
  });

  test('400 for an unknown environment type', async () => {
    const m = await signUpMember(app);
    const a = await createApp(m);
    const r = await app.rest('POST', `/v1/applications/${a.body.id}/environments`, { body: { type: 'STAGING' }, headers: m.headers });
    expectProblem(r, 400, 'VALIDATION_FAILED');
  });
});

describe('API keys', () => {
  test('generate: 201 shows the secret once with sk_test_ for a sandbox; list never shows it; the DB keeps only its sha256', async () => {
    const m = await signUpMember(app);
    const a = await createApp(m);
    const env = await createEnv(m, a.body.id, 'SANDBOX');
    const r = await generate(m, env.body.id);
    expect(r.status, r.text).toBe(201);
    expect(r.body).toMatchObject({ id: expect.stringMatching(uuid), environmentId: env.body.id, apiKey: expect.stringMatching(/^sk_test_[0-9A-Za-z]{40}$/) });
    const key: string = r.body.apiKey;
    expect(key.startsWith(r.body.displayPrefix)).toBe(true);
    expect(r.body.displayPrefix.length).toBeLessThan(key.length - 20);

    const audit = await expectAudit(r, m, { entityType: 'ApiKey', entityId: r.body.id, action: 'api_key.generated' });
    expect(JSON.stringify(audit)).not.toContain(key);
    expect(JSON.stringify(audit)).not.toContain(sha256(key));
    expect(await xminOf('AuditLogEntry', audit.id)).toBe(await xminOf('ApiKey', r.body.id));

    const stored = await app.deps.db.apiKey.findUniqueOrThrow({ where: { id: r.body.id } });
    expect(stored.keyHash).toBe(sha256(key));
    expect(JSON.stringify(stored)).not.toContain(key);
    const rawRows = await app.deps.db.$queryRawUnsafe<Record<string, unknown>[]>(`SELECT * FROM "ApiKey" WHERE id = $1::uuid`, r.body.id);
    expect(JSON.stringify(rawRows)).not.toContain(key);

    const list = await app.rest('GET', `/v1/environments/${env.body.id}/api-keys`, { headers: m.headers });
    expect(list.status, list.text).toBe(200);
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).toMatchObject({
      id: r.body.id,
      environmentId: env.body.id,
      applicationId: a.body.id,
      displayPrefix: r.body.displayPrefix,
      status: 'ACTIVE',
    });
    expect(list.body[0]).not.toHaveProperty('apiKey');
    expect(list.text).not.toContain(key);
    expect(list.text).not.toContain(sha256(key));

    expect(await keyOutcome(m, key)).toBe(AUTHENTICATED);
  });

  test('the list pages like every list: limit, after, Link rel="next"', async () => {
    const m = await signUpMember(app);
    const a = await createApp(m);
    const env = await createEnv(m, a.body.id, 'SANDBOX');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await generate(m, env.body.id)).body.id);
    const base = `/v1/environments/${env.body.id}/api-keys`;
    const seen: string[] = [];
    let next: string | null = `${base}?limit=2`;
    for (let pages = 0; next; pages++) {
      expect(pages).toBeLessThan(2);
      const page = await app.rest('GET', next, { headers: m.headers });
      expect(page.status, page.text).toBe(200);
      seen.push(...page.body.map((k: { id: string }) => k.id));
      next = /^<([^>]+)>; rel="next"$/.exec(page.headers.get('link') ?? '')?.[1] ?? null;
    }
    expect(seen).toEqual(ids.sort());
    expect(fieldsOf(await app.rest('GET', `${base}?limit=501`, { headers: m.headers }))).toEqual(['limit']);
  });

  test('a production environment gives sk_live_ keys, which authenticate', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m, 'PRODUCTION');
    expect(k.key).toMatch(/^sk_live_[0-9A-Za-z]{40}$/);
    expect(await keyOutcome(m, k.key)).toBe(AUTHENTICATED);
  });

  test('a key authenticates GraphQL too, and a wrong key is refused there', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const ok = await app.gql<{ health: string }>('{ health }', {}, k.headers);
    expect(ok).toEqual({ data: { health: 'ok' } });
    const denied = await app.gql('query($o: ID!) { applications(organizationId: $o) { id } }', { o: m.organizationId }, k.headers);
    expect(denied.errors?.[0]?.extensions?.code).toBe('PRINCIPAL_NOT_ALLOWED');
    const bad = await app.gql('query($o: ID!) { applications(organizationId: $o) { id } }', { o: m.organizationId }, apiKey('sk_test_' + 'A'.repeat(40)));
    expect(bad.errors?.[0]?.extensions?.code).toBe('INVALID_CREDENTIAL');
  });

  test('an unknown or malformed key gets 401', async () => {
    const m = await signUpMember(app);
    expect(await keyOutcome(m, 'sk_test_' + 'B'.repeat(40))).toBe(REFUSED);
    expect(await keyOutcome(m, 'not a key')).toBe(REFUSED);
  });

  test('revoke: 204, then the key gets 401; revoking again is 409', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    expect(await keyOutcome(m, k.key)).toBe(AUTHENTICATED);
    const r = await app.rest('DELETE', `/v1/api-keys/${k.apiKeyId}`, { headers: m.headers });
    expect(r.status, r.text).toBe(204);
    expect(r.text).toBe('');
    const audit = await expectAudit(r, m, { entityType: 'ApiKey', entityId: k.apiKeyId, action: 'api_key.revoked' });
    expect(await xminOf('AuditLogEntry', audit.id)).toBe(await xminOf('ApiKey', k.apiKeyId));
    expect(await keyOutcome(m, k.key)).toBe(REFUSED);
    expectProblem(await app.rest('DELETE', `/v1/api-keys/${k.apiKeyId}`, { headers: m.headers }), 409, 'INVALID_STATE');
    const list = await app.rest('GET', `/v1/environments/${k.environmentId}/api-keys`, { headers: m.headers });
    expect(list.body[0]).toMatchObject({ id: k.apiKeyId, status: 'REVOKED', revokedAt: expect.any(String) });
    expect(await app.deps.db.auditLogEntry.count({ where: { entityId: k.apiKeyId, action: 'api_key.revoked' } })).toBe(1);
  });

  test('rotate without grace: the old key gets 401 at once, the new key works', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const r = await app.rest('POST', `/v1/api-keys/${k.apiKeyId}/rotate`, { headers: m.headers });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ apiKey: expect.stringMatching(/^sk_test_/), previousApiKeyId: k.apiKeyId, environmentId: k.environmentId });
    expect(r.body.id).not.toBe(k.apiKeyId);
    expect(Date.parse(r.body.previousKeyExpiresAt)).toBe(app.clock.now().getTime());
    const audit = await expectAudit(r, m, { entityType: 'ApiKey', entityId: k.apiKeyId, action: 'api_key.rotated' });
    expect(audit.after).toMatchObject({ replacedBy: r.body.id });
    expect(JSON.stringify(audit)).not.toContain(r.body.apiKey);
    expect(await xminOf('AuditLogEntry', audit.id)).toBe(await xminOf('ApiKey', k.apiKeyId));
    expect(await xminOf('AuditLogEntry', audit.id)).toBe(await xminOf('ApiKey', r.body.id));
    expect(await keyOutcome(m, k.key)).toBe(REFUSED);
    expect(await keyOutcome(m, r.body.apiKey)).toBe(AUTHENTICATED);
    // A key can be rotated once.
    expectProblem(await app.rest('POST', `/v1/api-keys/${k.apiKeyId}/rotate`, { body: {}, headers: m.headers }), 409, 'INVALID_STATE');
  });

  test('rotate with expiresInSeconds=60: the old key works until the clock passes it, then 401', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const start = app.clock.now().getTime();
    const r = await app.rest('POST', `/v1/api-keys/${k.apiKeyId}/rotate`, { body: { expiresInSeconds: 60 }, headers: m.headers });
    expect(r.status, r.text).toBe(200);
    expect(Date.parse(r.body.previousKeyExpiresAt)).toBe(start + 60_000);
    expect(await keyOutcome(m, k.key)).toBe(AUTHENTICATED);
    expect(await keyOutcome(m, r.body.apiKey)).toBe(AUTHENTICATED);
    const list = await app.rest('GET', `/v1/environments/${k.environmentId}/api-keys`, { headers: m.headers });
    const old = list.body.find((x: { id: string }) => x.id === k.apiKeyId);
    expect(old).toMatchObject({ status: 'EXPIRING', expiresAt: new Date(start + 60_000).toISOString() });
    expect(list.body.find((x: { id: string }) => x.id === r.body.id)).toMatchObject({ status: 'ACTIVE', rotatedFromId: k.apiKeyId });

    app.clock.advance(59_000);
    expect(await keyOutcome(m, k.key)).toBe(AUTHENTICATED);
    app.clock.advance(1_000);
    expect(await keyOutcome(m, k.key)).toBe(REFUSED);
    expect(await keyOutcome(m, r.body.apiKey)).toBe(AUTHENTICATED);
    const after = await app.rest('GET', `/v1/environments/${k.environmentId}/api-keys`, { headers: m.headers });
    expect(after.body.find((x: { id: string }) => x.id === k.apiKeyId).status).toBe('EXPIRED');
  });

  test('rotate: 400 for a grace period out of range', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    expectProblem(
      await app.rest('POST', `/v1/api-keys/${k.apiKeyId}/rotate`, { body: { expiresInSeconds: -1 }, headers: m.headers }),
      400,
      'VALIDATION_FAILED',
    );
    expectProblem(
      await app.rest('POST', `/v1/api-keys/${k.apiKeyId}/rotate`, { body: { expiresInSeconds: 7 * 24 * 3600 + 1 }, headers: m.headers }),
      400,
      'VALIDATION_FAILED',
    );
    expect(await keyOutcome(m, k.key)).toBe(AUTHENTICATED);
    expect(await app.deps.db.apiKey.count({ where: { environmentId: k.environmentId } })).toBe(1);
  });
});

describe('application lifecycle', () => {
  test('suspend needs a reason (400 without)', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    expectProblem(await app.rest('POST', `/v1/applications/${k.applicationId}/suspend`, { headers: m.headers }), 400, 'VALIDATION_FAILED');
    expectProblem(await app.rest('POST', `/v1/applications/${k.applicationId}/suspend`, { body: {}, headers: m.headers }), 400, 'VALIDATION_FAILED');
    expectProblem(
      await app.rest('POST', `/v1/applications/${k.applicationId}/suspend`, { body: { reason: '   ' }, headers: m.headers }),
      400,
      'VALIDATION_FAILED',
    );
    expect((await app.deps.db.application.findUniqueOrThrow({ where: { id: k.applicationId } })).status).toBe('ACTIVE');
    expect(await keyOutcome(m, k.key)).toBe(AUTHENTICATED);
  });

  test('suspend: keys get 403 APPLICATION_INACTIVE, no key or environment can be added; reactivate restores the same keys', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const s = await app.rest('POST', `/v1/applications/${k.applicationId}/suspend`, { body: { reason: 'Unpaid invoice' }, headers: m.headers });
    expect(s.status, s.text).toBe(204);
    const audit = await expectAudit(s, m, { entityType: 'Application', entityId: k.applicationId, action: 'application.suspended' });
    expect(audit.before).toEqual({ status: 'ACTIVE' });
    expect(audit.after).toEqual({ status: 'SUSPENDED', reason: 'Unpaid invoice' });
    expect(await xminOf('AuditLogEntry', audit.id)).toBe(await xminOf('Application', k.applicationId));

    expect(await keyOutcome(m, k.key)).toBe(INACTIVE);
    const got = await app.rest('GET', `/v1/applications/${k.applicationId}`, { headers: m.headers });
    expect(got.body).toMatchObject({ status: 'SUSPENDED', statusReason: 'Unpaid invoice' });
    expectProblem(await generate(m, k.environmentId), 409, 'INVALID_STATE');
    expectProblem(await createEnv(m, k.applicationId, 'PRODUCTION'), 409, 'INVALID_STATE');
    expectProblem(await app.rest('POST', `/v1/api-keys/${k.apiKeyId}/rotate`, { headers: m.headers }), 409, 'INVALID_STATE');
    expectProblem(
      await app.rest('POST', `/v1/applications/${k.applicationId}/suspend`, { body: { reason: 'again' }, headers: m.headers }),
      409,
      'INVALID_STATE',
    );
    expect(await app.deps.db.apiKey.count({ where: { applicationId: k.applicationId } })).toBe(1);

    const r = await app.rest('POST', `/v1/applications/${k.applicationId}/reactivate`, { headers: m.headers });
    expect(r.status, r.text).toBe(204);
    const reactivated = await expectAudit(r, m, { entityType: 'Application', entityId: k.applicationId, action: 'application.reactivated' });
    expect(reactivated.before).toEqual({ status: 'SUSPENDED' });
    expect(reactivated.after).toEqual({ status: 'ACTIVE' });
    expect(await xminOf('AuditLogEntry', reactivated.id)).toBe(await xminOf('Application', k.applicationId));
    expect(await keyOutcome(m, k.key)).toBe(AUTHENTICATED);
    expect((await app.rest('GET', `/v1/applications/${k.applicationId}`, { headers: m.headers })).body).toMatchObject({ status: 'ACTIVE', statusReason: null });
    expect((await generate(m, k.environmentId)).status).toBe(201);
    // Reactivating an active application is a conflict, and writes no audit entry.
    expectProblem(await app.rest('POST', `/v1/applications/${k.applicationId}/reactivate`, { headers: m.headers }), 409, 'INVALID_STATE');
    expect(await app.deps.db.auditLogEntry.count({ where: { entityId: k.applicationId, action: 'application.reactivated' } })).toBe(1);
  });

  test('archive: keys are revoked for good; reactivate is 409', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const second = await generate(m, k.environmentId);
    const r = await app.rest('POST', `/v1/applications/${k.applicationId}/archive`, { headers: m.headers });
    expect(r.status, r.text).toBe(204);
    const audit = await expectAudit(r, m, { entityType: 'Application', entityId: k.applicationId, action: 'application.archived' });
    expect(await xminOf('AuditLogEntry', audit.id)).toBe(await xminOf('Application', k.applicationId));
    expect(await xminOf('AuditLogEntry', audit.id)).toBe(await xminOf('ApiKey', k.apiKeyId));

    for (const key of [k.key, second.body.apiKey as string]) expect(await keyOutcome(m, key)).toBe(REFUSED);
    const keys = await app.deps.db.apiKey.findMany({ where: { applicationId: k.applicationId } });
    expect(keys.map((x) => x.status)).toEqual(['REVOKED', 'REVOKED']);

    const reactivate = await app.rest('POST', `/v1/applications/${k.applicationId}/reactivate`, { headers: m.headers });
    expectProblem(reactivate, 409, 'INVALID_STATE');
    expect(reactivate.body.detail).toBe('An application in status ARCHIVED cannot be reactivated.'); // issue 27: not "reactivateed"
    const suspend = await app.rest('POST', `/v1/applications/${k.applicationId}/suspend`, { headers: m.headers, body: { reason: 'x' } });
    expect(suspend.body.detail).toBe('An application in status ARCHIVED cannot be suspended.');
    const archive = await app.rest('POST', `/v1/applications/${k.applicationId}/archive`, { headers: m.headers });
    expectProblem(archive, 409, 'INVALID_STATE');
    expect(archive.body.detail).toBe('An application in status ARCHIVED cannot be archived.');
    expectProblem(await generate(m, k.environmentId), 409, 'INVALID_STATE');
    for (const key of [k.key, second.body.apiKey as string]) expect(await keyOutcome(m, key)).toBe(REFUSED);
    expect((await app.deps.db.application.findUniqueOrThrow({ where: { id: k.applicationId } })).status).toBe('ARCHIVED');
  });

  test('a suspended application can be archived; its keys stay refused after', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    expect((await app.rest('POST', `/v1/applications/${k.applicationId}/suspend`, { body: { reason: 'r' }, headers: m.headers })).status).toBe(204);
    expect((await app.rest('POST', `/v1/applications/${k.applicationId}/archive`, { headers: m.headers })).status).toBe(204);
    expect(await keyOutcome(m, k.key)).toBe(REFUSED);
    expectProblem(await app.rest('POST', `/v1/applications/${k.applicationId}/reactivate`, { headers: m.headers }), 409, 'INVALID_STATE');
  });
});

describe('audit log', () => {
  test('is append-only: UPDATE, DELETE and TRUNCATE are refused and the entry is unchanged', async () => {
    const m = await signUpMember(app);
    const a = await createApp(m);
    const entry = await app.deps.db.auditLogEntry.findFirstOrThrow({ where: { entityId: a.body.id } });
    // The service's role holds no UPDATE, DELETE or TRUNCATE on the table (test/db-roles.test.ts);
    // the triggers refuse them even to the owner, who could only get past them by disabling them.
    const db = app.ownerDb;
    await expect(db.$executeRawUnsafe(`UPDATE "AuditLogEntry" SET action = 'tampered' WHERE id = $1::uuid`, entry.id)).rejects.toThrow(/append-only/);
    await expect(db.$executeRawUnsafe(`UPDATE "AuditLogEntry" SET "requestId" = 'x'`)).rejects.toThrow(/append-only/);
    await expect(db.$executeRawUnsafe(`DELETE FROM "AuditLogEntry" WHERE id = $1::uuid`, entry.id)).rejects.toThrow(/append-only/);
    await expect(db.$executeRawUnsafe(`DELETE FROM "AuditLogEntry"`)).rejects.toThrow(/append-only/);
    await expect(db.$executeRawUnsafe(`TRUNCATE "AuditLogEntry"`)).rejects.toThrow(/append-only/);
    await expect(db.auditLogEntry.update({ where: { id: entry.id }, data: { action: 'tampered' } })).rejects.toThrow();
    await expect(db.auditLogEntry.delete({ where: { id: entry.id } })).rejects.toThrow();
    expect(await db.auditLogEntry.findUniqueOrThrow({ where: { id: entry.id } })).toEqual(entry);
  });

  test('a refused change writes no audit entry', async () => {
    const m = await signUpMember(app);
    const a = await createApp(m);
    const before = await app.deps.db.auditLogEntry.count({ where: { organizationId: m.organizationId } });
    expectProblem(await app.rest('POST', `/v1/applications/${a.body.id}/reactivate`, { headers: m.headers }), 409, 'INVALID_STATE');
    expectProblem(await app.rest('POST', `/v1/applications/${a.body.id}/suspend`, { body: {}, headers: m.headers }), 400, 'VALIDATION_FAILED');
    expect(await app.deps.db.auditLogEntry.count({ where: { organizationId: m.organizationId } })).toBe(before);
  });
});

describe('request ids and routing', () => {
  test('every response carries X-Request-Id: success, 204, problem, unknown route, GraphQL, health', async () => {
    const m = await signUpMember(app);
    const k = await createApiKey(app, m);
    const responses: RestResult[] = [
      await app.rest('GET', `/v1/applications/${k.applicationId}`, { headers: m.headers }),
      await app.rest('DELETE', `/v1/api-keys/${k.apiKeyId}`, { headers: m.headers }),
      await app.rest('GET', `/v1/applications/${k.applicationId}`),
      await app.rest('GET', '/v1/nothing-here'),
      await app.rest('PUT', '/v1/auth/login'),
      await app.rest('POST', '/graphql', { body: { query: '{ health }' } }),
      await app.rest('GET', '/healthz'),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 204, 401, 404, 405, 200, 200]);
    const ids = responses.map((r) => r.headers.get('x-request-id'));
    for (const id of ids) expect(id).toMatch(uuid);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('a caller-supplied X-Request-Id is echoed, in the header, the problem body and the audit entry', async () => {
    const m = await signUpMember(app);
    const id = 'caller-req.' + Date.now();
    const ok = await app.rest('POST', `/v1/organizations/${m.organizationId}/applications`, {
      body: { name: 'x' },
      headers: { ...m.headers, 'x-request-id': id },
    });
    expect(ok.status).toBe(201);
    expect(ok.headers.get('x-request-id')).toBe(id);
    expect((await app.deps.db.auditLogEntry.findFirstOrThrow({ where: { entityId: ok.body.id } })).requestId).toBe(id);
    const err = await app.rest('GET', `/v1/applications/${crypto.randomUUID()}`, { headers: { ...m.headers, 'x-request-id': id + '-2' } });
    expect(err.status).toBe(404);
    expect(err.headers.get('x-request-id')).toBe(id + '-2');
    expect(err.body.requestId).toBe(id + '-2');
    const res = await app.rest('POST', '/graphql', { body: { query: '{ health }' }, headers: { 'x-request-id': id + '-3' } });
    expect(res.headers.get('x-request-id')).toBe(id + '-3');
  });

  test('a malformed X-Request-Id is replaced by a fresh one', async () => {
    const r = await app.rest('GET', '/v1/nothing', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(r.headers.get('x-request-id')).toMatch(uuid);
  });

  test('an unknown route answers 404 problem+json', async () => {
    const r = await app.rest('GET', '/v1/no-such-thing/at-all');
    expectProblem(r, 404, 'ROUTE_NOT_FOUND');
    expect(r.body.type).toBe('/problems/route-not-found');
  });

  test('a wrong method answers 405 with Allow', async () => {
    const login = await app.rest('PUT', '/v1/auth/login');
    expectProblem(login, 405, 'METHOD_NOT_ALLOWED');
    expect(login.headers.get('allow')).toBe('POST');
    const apps = await app.rest('DELETE', `/v1/organizations/${crypto.randomUUID()}/applications`);
    expectProblem(apps, 405, 'METHOD_NOT_ALLOWED');
    expect(apps.headers.get('allow')!.split(/,\s*/).sort()).toEqual(['GET', 'POST']);
  });
});

test('malformed ids answer NOT_FOUND through GraphQL, never an internal error', async () => {
  const m = await signUpMember(app);
  for (const query of [
    '{ application(id: "nope") { id } }',
    '{ environment(id: "nope") { id } }',
    '{ environment(id: "nope") { apiKeys(first: 5) { nodes { id } } } }',
    'mutation { revokeApiKey(id: "nope") { id } }',
    'mutation { rotateApiKey(id: "nope") { id } }',
  ]) {
    const r = await app.gql(query, {}, m.headers);
    expect(r.errors?.[0]?.extensions?.code, query).toBe('NOT_FOUND');
  }
});
