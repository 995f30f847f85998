import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createTestApp, signUpMember, uniqueEmail, PASSWORD, type TestApp } from './harness';
import { routes } from '../rest/routes';
import { principalsOf } from '../src/auth/policy';

/**
 * The OpenAPI document served at GET /v1/openapi.json, checked structurally against the route
 * table (no OpenAPI validator is installed): every route, status, parameter and $ref.
 */

type Doc = {
  openapi: string;
  info: { title: string; version: string; description: string };
  servers: { url: string }[];
  tags: { name: string }[];
  paths: Record<string, Record<string, Op>>;
  components: { schemas: Record<string, any>; securitySchemes: Record<string, any>; headers?: Record<string, any> };
};
type Op = {
  operationId: string;
  tags: string[];
  security: Record<string, string[]>[];
  'x-principals': string[];
  'x-extension'?: boolean;
  parameters?: { name: string; in: string; required?: boolean; schema: any }[];
  requestBody?: { required: boolean; content: Record<string, { schema: any }> };
  responses: Record<string, { description: string; headers?: Record<string, any>; content?: Record<string, { schema: any }> }>;
};

const rateLimited = ['Login', 'RefreshToken', 'LoginAccountHolder', 'RequestPasswordReset', 'RefreshAccountHolderToken'];
const scheme = { member: 'MemberBearer', apiKey: 'ApiKey', accountHolder: 'AccountHolderBearer', operator: 'OperatorKey' } as const;

let app: TestApp;
let doc: Doc;
const opOf = (operationId: string): Op => {
  const r = routes.find((x) => x.operationId === operationId)!;
  return doc.paths[r.path]![r.method.toLowerCase()]!;
};

/** Follows a local JSON pointer ($ref) into the document. */
function resolvePointer(ref: string): unknown {
  expect(ref.startsWith('#/'), `non-local $ref ${ref}`).toBe(true);
  return ref
    .slice(2)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<any>((v, k) => (v && typeof v === 'object' ? v[k] : undefined), doc);
}
const deref = (s: any): any => (s && s.$ref ? deref(resolvePointer(s.$ref)) : s);

beforeAll(async () => {
  app = await createTestApp();
  const res = await app.rest('GET', '/v1/openapi.json');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/application\/json/);
  doc = res.body;
});
afterAll(() => app.close());

test('is an OpenAPI 3.1 document with info, servers, tags and the four security schemes', () => {
  expect(doc.openapi).toBe('3.1.0');
  expect(doc.info.version).toBe('v1');
  expect(doc.info.title).toBeTruthy();
  for (const p of ['member', 'apiKey', 'accountHolder', 'operator']) expect(doc.info.description).toContain(p);
  expect(doc.servers).toEqual([{ url: '/' }]);
  expect(doc.tags.map((t) => t.name).sort()).toEqual([...new Set(routes.map((r) => r.tag))].sort());
  const s = doc.components.securitySchemes;
  expect(s.ApiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Api-Key' });
  expect(s.OperatorKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Operator-Key' });
  expect(s.MemberBearer).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  expect(s.AccountHolderBearer).toMatchObject({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
  expect(JSON.stringify(s.MemberBearer)).toContain('member');
  expect(JSON.stringify(s.AccountHolderBearer)).toContain('account-holder');
});

describe('every route of the table', () => {
  test('appears with its method, operationId, tag, extension flag and unique operationId', () => {
    const ids = new Set<string>();
    for (const r of routes) {
      const op = doc.paths[r.path]?.[r.method.toLowerCase()];
      expect(op, `${r.method} ${r.path}`).toBeDefined();
      expect(op!.operationId).toBe(r.operationId);
      expect(op!.tags).toEqual([r.tag]);
      expect(op!['x-extension'] === true).toBe(r.extension === true);
      expect(ids.has(r.operationId), `duplicate ${r.operationId}`).toBe(false);
      ids.add(r.operationId);
    }
    const documented = Object.values(doc.paths).reduce((n, p) => n + Object.keys(p).length, 0);
    expect(documented).toBe(routes.length);
  });

  test('documents every status: success, its errors and the generic ones', () => {
    for (const r of routes) {
      const op = doc.paths[r.path]![r.method.toLowerCase()]!;
      const takesQuery = Object.values(r.variables ?? {}).some((s) => s.startsWith('query.'));
      const expected = new Set<number>([r.success.status, ...(r.errors ?? []), 500]);
      if (r.body || r.path.includes('{') || takesQuery) expected.add(400);
      if (!r.policy.public) expected.add(401).add(403);
      if (rateLimited.includes(r.operationId)) expected.add(429);
      if (!r.operation) expected.add(501);
      const got = new Set(Object.keys(op.responses).map(Number));
      for (const s of expected) expect(got.has(s), `${r.operationId} documents ${s}`).toBe(true);
      for (const [status, res] of Object.entries(op.responses)) {
        expect(res.description, `${r.operationId} ${status} description`).toBeTruthy();
        if (Number(status) >= 400) {
          const tokenResult = status === '401' && r.tokenResultOn401; // the spec's TokenResult media type
          const schema = res.content?.[tokenResult ? 'application/json' : 'application/problem+json']?.schema;
          expect(schema, `${r.operationId} ${status} is a problem`).toBeDefined();
          const refs = schema.$ref ? [schema.$ref] : (schema.allOf ?? []).map((s: any) => s.$ref);
          expect(refs).toContain('#/components/schemas/Problem');
        }
      }
      // No 429 where nothing limits; no 401/403 on public routes.
      if (!rateLimited.includes(r.operationId)) expect(got.has(429), `${r.operationId} 429`).toBe(false);
      if (r.policy.public) expect(got.has(403), `${r.operationId} 403`).toBe(false);
    }
  });

  test('security and x-principals match principalsOf(policy)', () => {
    for (const r of routes) {
      const op = doc.paths[r.path]![r.method.toLowerCase()]!;
      const kinds = principalsOf(r.policy);
      expect(op['x-principals'], r.operationId).toEqual(kinds);
      expect(op.security, r.operationId).toEqual(kinds.map((k) => ({ [scheme[k]]: [] })));
      if (r.policy.public) expect(op.security).toEqual([]);
      for (const req of op.security) for (const name of Object.keys(req)) expect(doc.components.securitySchemes[name]).toBeDefined();
    }
  });

  test('declares every path parameter (uuid), query and header variable, and a body exactly when the route takes one', () => {
    for (const r of routes) {
      const op = doc.paths[r.path]![r.method.toLowerCase()]!;
      const params = op.parameters ?? [];
      for (const [, name] of r.path.matchAll(/\{(\w+)\}/g)) {
        const p = params.find((x) => x.in === 'path' && x.name === name);
        expect(p, `${r.operationId} path ${name}`).toMatchObject({ required: true, schema: { type: 'string', format: 'uuid' } });
      }
      for (const source of Object.values(r.variables ?? {})) {
        if (source.startsWith('query.'))
          expect(
            params.some((p) => p.in === 'query' && p.name === source.slice(6)),
            `${r.operationId} ${source}`,
          ).toBe(true);
        if (source.startsWith('header.'))
          expect(
            params.some((p) => p.in === 'header' && p.name.toLowerCase() === source.slice(7).toLowerCase()),
            `${r.operationId} ${source}`,
          ).toBe(true);
      }
      if (r.body) {
        expect(op.requestBody, r.operationId).toBeDefined();
        expect(op.requestBody!.required).toBe(r.body === 'required');
        expect(op.requestBody!.content['application/json']!.schema).toBeDefined();
      } else expect(op.requestBody, r.operationId).toBeUndefined();
      const success = op.responses[String(r.success.status)]!;
      if (r.success.status === 204 || r.success.body === undefined) expect(success.content, r.operationId).toBeUndefined();
      else expect(success.content?.['application/json']?.schema, r.operationId).toBeDefined();
      if (r.success.location) expect(success.headers?.Location, `${r.operationId} Location`).toBeDefined();
      if (r.success.page === 'list') expect(success.headers?.Link, `${r.operationId} Link`).toBeDefined();
    }
  });
});

test('every $ref resolves', () => {
  const refs: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (k === '$ref') refs.push(x as string);
        else walk(x);
      }
    }
  };
  walk(doc);
  expect(refs.length).toBeGreaterThan(0);
  for (const r of new Set(refs)) expect(resolvePointer(r), r).toBeDefined();
});

test('CreateAccount: 201 without content, with a Location header', () => {
  const op = opOf('CreateAccount');
  const created = op.responses['201']!;
  expect(created.content).toBeUndefined();
  expect(created.headers?.Location).toMatchObject({ schema: { type: 'string' } });
  expect(op.requestBody?.required).toBe(true);
  expect(op.parameters?.some((p) => p.in === 'header' && p.name === 'Idempotency-Key')).toBe(true);
});

test('SignUp: Idempotency-Key header, body from SignUpInput, 201 body from the selection, 400 and 409', () => {
  const op = opOf('SignUp');
  expect(op.parameters).toContainEqual(expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string' } }));
  expect(op.responses['400']).toBeDefined();
  expect(op.responses['409']).toBeDefined();
  const input = deref(op.requestBody!.content['application/json']!.schema);
  expect(input).toMatchObject({ type: 'object', additionalProperties: false });
  expect(Object.keys(input.properties).sort()).toEqual(['email', 'name', 'organizationName', 'password']);
  expect(input.required.sort()).toEqual(['email', 'name', 'organizationName', 'password']);
  const body = deref(op.responses['201']!.content!['application/json']!.schema);
  expect(body.properties).toEqual({
    organizationId: { type: 'string', format: 'uuid' },
    memberId: { type: 'string', format: 'uuid' },
    email: { type: 'string' },
  });
});

test('GetApplication: the 200 schema is the selection set (enums, nullable fields, date-times)', () => {
  const body = deref(opOf('GetApplication').responses['200']!.content!['application/json']!.schema);
  expect(Object.keys(body.properties).sort()).toEqual(['createdAt', 'id', 'name', 'organizationId', 'status', 'statusReason']);
  expect(body.properties.createdAt).toMatchObject({ type: 'string', format: 'date-time' });
  expect(body.properties.statusReason.type).toEqual(['string', 'null']);
  expect(deref(body.properties.status)).toMatchObject({ type: 'string', enum: ['ACTIVE', 'ARCHIVED', 'SUSPENDED'] });
  const list = opOf('ListApplications').responses['200']!.content!['application/json']!.schema;
  expect(list.type).toBe('array');
  expect(deref(list.items).properties.id).toEqual({ type: 'string', format: 'uuid' });
});

test("Login's 401 is a problem shaped like a failed TokenResult, and matches what the route answers", async () => {
  const op = opOf('Login');
  const schema = op.responses['401']!.content!['application/json']!.schema;
  expect(schema.allOf).toHaveLength(2);
  const parts = schema.allOf.map(deref);
  const properties = Object.assign({}, ...parts.map((p: any) => p.properties));
  const required: string[] = parts.flatMap((p: any) => p.required ?? []);
  for (const f of ['succeeded', 'tokenType', 'accessToken', 'refreshToken', 'type', 'title', 'status', 'code', 'requestId'])
    expect(properties[f], f).toBeDefined();

  const m = await signUpMember(app);
  const res = await app.rest('POST', '/v1/auth/login', { body: { email: m.email, password: PASSWORD + 'x' } });
  expect(res.status).toBe(401);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  for (const f of required) expect(res.body, f).toHaveProperty(f);
  for (const k of Object.keys(res.body)) expect(properties, `undocumented ${k}`).toHaveProperty(k);
  expect(res.body.succeeded).toBe(false);
});

test('a real 200 answer has exactly the documented properties', async () => {
  const email = uniqueEmail('oa');
  await app.rest('POST', '/v1/auth/signup', { body: { email, password: PASSWORD, name: 'O', organizationName: 'Org ' + email } });
  const res = await app.rest('POST', '/v1/auth/login', { body: { email, password: PASSWORD } });
  expect(res.status).toBe(200);
  const schema = deref(opOf('Login').responses['200']!.content!['application/json']!.schema);
  expect(Object.keys(res.body).sort()).toEqual(Object.keys(schema.properties).sort());
  expect(schema.required.sort()).toEqual(Object.keys(res.body).sort());
});

/** Every schema name of the spec (api-v1.md: the named schemas and the Body and Success columns). */
const specSchemaNames = [
  'CreateAccountHolderInvitationRequest',
  'CreateAccountHolderInvitationResult',
  'SignUpAccountHolderRequest',
  'LoginAccountHolderRequest',
  'ClaimAccountHolderInvitationRequest',
  'ClaimAccountHolderInvitationResult',
  'SignUpAndClaimAccountHolderInvitationRequest',
  'SignUpAndClaimAccountHolderInvitationResult',
  'CreateAccountRequest',
  'OrganizationAccountResponse',
  'AccountResponse',
  'AccountHolderResponse',
  'AuthorizeApplicationRequest',
  'FreezeAccountRequest',
  'AuditLogEntryResponse',
  'RotateApiKeyRequest',
  'RotateApiKeyResult',
  'GenerateApiKeyResult',
  'ApiKeyMetadataResponse',
  'CreateEnvironmentRequest',
  'EnvironmentResponse',
  'CreatedResourceResponse',
  'SuspendRequest',
  'AssetResponse',
  'NetworkResponse',
  'AssetNetworkResponse',
  'CreateAssetRequest',
  'CreateNetworkRequest',
  'CreateAssetNetworkRequest',
  'PauseAssetNetworkRequest',
  'LoginRequest',
  'RefreshTokenRequest',
  'RequestPasswordResetRequest',
  'ResetPasswordRequest',
  'SignUpRequest',
  'SignUpResponse',
  'CreatePaymentIntentRequest',
  'PaymentIntentResponse',
  'DepositResponse',
  'RegisterWalletRequest',
  'AllocateDepositAddressRequest',
  'AllocatedDepositAddressResponse',
  'WalletResponse',
  'CreateSigningRequestRequest',
  'TokenResult',
  'AssetNetworkStatus',
  'AdminExecuteSandboxSweepCommand',
  'AdminRejectWithdrawalRequest',
  'AdminBlockWithdrawalDestinationRequest',
  'AdminConfigureWithdrawalPolicyRequest',
  'AdminConfigurePayoutPolicyRequest',
  'AdminResolveDepositUnderReviewRequest',
  'AdminResolveDepositReorgRequest',
  'AdminConfigurePricingPolicyCommand',
  'AdminRegisterGlobalRevenueAccountExecutionDestinationCommand',
  'AdminConfigureTronResourceCostTableCommand',
  'AdminConfigureNetworkExecutionMarginPolicyCommand',
  'AdminSeedNetworkResourceReserveCommand',
  'AdminConfigureResourceReservePolicyCommand',
  'AdminConfigureReplenishmentRouteCommand',
  'AdminConfigureRefundFeePolicyCommand',
  'AdminResolveReconciliationDivergenceRequest',
  'RecordAdministrativeLedgerCorrectionCommand',
  'AdminRegisterControlledAddressCommand',
  'AdminConfigureTreasuryLiquidityPolicyCommand',
];

describe("the spec's schema names", () => {
  test('every schema the spec names is a component, and no `…Input` component is left for a body the spec names', () => {
    for (const name of specSchemaNames) expect(doc.components.schemas[name], name).toBeDefined();
    for (const r of routes.filter((x) => x.schemas?.request)) {
      const body = opOf(r.operationId).requestBody!.content['application/json']!.schema;
      expect(body, r.operationId).toEqual({ $ref: `#/components/schemas/${r.schemas!.request}` });
    }
  });

  test('each spec operation refers to its named request and response schemas', () => {
    const bodyRef = (id: string) => opOf(id).requestBody!.content['application/json']!.schema.$ref;
    const okRef = (id: string, status = '200') => {
      const s = opOf(id).responses[status]!.content!['application/json']!.schema;
      return (s.items ?? s).$ref;
    };
    const schemaRef = (n: string) => `#/components/schemas/${n}`;
    expect(bodyRef('CreateAccount')).toBe(schemaRef('CreateAccountRequest'));
    expect(bodyRef('AuthorizeAccountForApplication')).toBe(schemaRef('AuthorizeApplicationRequest'));
    expect(bodyRef('ConfirmPasswordReset')).toBe(schemaRef('ResetPasswordRequest'));
    expect(bodyRef('AdminRecordLedgerCorrection')).toBe(schemaRef('RecordAdministrativeLedgerCorrectionCommand'));
    expect(okRef('ListAccountsByOrganization')).toBe(schemaRef('OrganizationAccountResponse'));
    expect(okRef('GetAccount')).toBe(schemaRef('AccountResponse'));
    expect(okRef('ListAssets')).toBe(schemaRef('AssetResponse'));
    expect(okRef('GetAsset')).toBe(schemaRef('AssetResponse'));
    expect(okRef('ListEnvironments')).toBe(schemaRef('EnvironmentResponse'));
    expect(okRef('CreateEnvironment', '201')).toBe(schemaRef('CreatedResourceResponse'));
    expect(okRef('Login')).toBe(schemaRef('TokenResult'));
    expect(okRef('GetPaymentIntent')).toBe(schemaRef('PaymentIntentResponse'));
    expect(doc.components.schemas.CreatedResourceResponse).toEqual({
      type: 'object',
      properties: { id: { type: 'string', format: 'uuid' } },
      required: ['id'],
      additionalProperties: false,
    });
  });

  test('uuid path and query parameters and every id field carry format: uuid', () => {
    for (const r of routes) {
      for (const p of opOf(r.operationId).parameters ?? []) {
        if (p.in === 'path' || /(^|[a-z])Id$|^after$/.test(p.name))
          expect(p.schema, `${r.operationId} ${p.name}`).toMatchObject({ type: 'string', format: 'uuid' });
      }
    }
    const audit = opOf('SearchAuditLog').parameters!;
    for (const n of ['organizationId', 'entityId']) expect(audit.find((p) => p.name === n)!.schema).toEqual({ type: 'string', format: 'uuid' });
    // id fields of every component: `id`, `…Id` (ids), `…Ids` (lists of ids).
    const notUuid: string[] = [];
    for (const [component, s] of Object.entries(doc.components.schemas)) {
      for (const [field, f] of Object.entries<any>(s.properties ?? {})) {
        if (!/^id$|Ids?$/.test(field) || field === 'requestId' || f.type === 'null') continue; // requestId: the caller's X-Request-Id
        let inner = f.anyOf?.[0] ?? f.allOf?.[0] ?? f;
        if (inner.type === 'array' || inner.type?.[0] === 'array') inner = inner.items;
        if (inner.format !== 'uuid') notUuid.push(`${component}.${field}`);
      }
    }
    expect(notUuid).toEqual([]);
  });

  test('a 201 that creates a resource answers { id } (CreatedResourceResponse) beside Location, except where the spec fixes no body', () => {
    const noBody = ['CreateAccount', 'CreatePaymentIntent', 'RegisterWallet', 'CreateSigningRequest'];
    for (const r of routes.filter((x) => x.success.status === 201 && x.success.location)) {
      const created = opOf(r.operationId).responses['201']!;
      if (noBody.includes(r.operationId)) {
        expect(created.content, r.operationId).toBeUndefined();
        expect(created.headers?.Location, r.operationId).toMatchObject({ required: true });
        continue;
      }
      const schema = deref(created.content?.['application/json']?.schema);
      expect(schema?.properties?.id, `${r.operationId} answers its id`).toMatchObject({ type: 'string', format: 'uuid' });
    }
  });

  test('the security schemes state the one-credential rule (MULTIPLE_CREDENTIALS)', () => {
    for (const [name, s] of Object.entries(doc.components.securitySchemes)) expect(s.description, name).toContain('MULTIPLE_CREDENTIALS');
    expect(doc.info.description).toContain('MULTIPLE_CREDENTIALS');
  });
});

test('declares every response header the service sends: X-Request-Id and Cache-Control always, Location on creation, Link on pages, Retry-After on 429', () => {
  for (const r of routes) {
    for (const [status, res] of Object.entries(opOf(r.operationId).responses)) {
      const where = `${r.operationId} ${status}`;
      expect(Object.keys(res.headers ?? {}), where).toEqual(expect.arrayContaining(['X-Request-Id', 'Cache-Control']));
      if (status === '429') expect(res.headers!['Retry-After'], where).toBeDefined();
      if (status === String(r.success.status) && r.success.location) expect(res.headers!.Location, where).toMatchObject({ required: true });
      if (status === String(r.success.status) && r.success.page === 'list') expect(res.headers!.Link, where).toBeDefined();
    }
  }
  expect(doc.components.headers!.CacheControl.schema).toEqual({ type: 'string', const: 'no-store' });
});
