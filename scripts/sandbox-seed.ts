// npm run sandbox:seed [-- --json] [--email E --password P] — a sandbox ready for a first payment:
// a platform operator, an enabled sandbox catalog (asset, SANDBOX network, asset-network), an
// organization with its owner (email, password), an application, its SANDBOX environment and an API
// key, a custodial wallet on the sandbox network and two accounts. Prints every id and secret as
// `export NAME='value'` lines (eval "$(npm run -s sandbox:seed)"), or one JSON object with --json.
//
// Idempotent: a second run finds what the first made (same ids, nothing duplicated). Secrets are
// shown once (docs/decisions.md, issue 16): the operator's key only on the run that creates it; a new
// API key on every run (the earlier ones stay valid until revoked). Everything but the operator
// (which has no API, as `npm run operator:create`) is made through the REST API, in this process,
// so each change has its audit entry. While `npm start` runs on the same DATA_DIR, its embedded
// PostgreSQL is used. Refused in production.
import '../src/boot'; // first: an invalid setting is one line, not a stack
import { parseArgs } from 'node:util';
import { config, missingSharedDatabaseKeys } from '../src/config';
import { withDatabase } from '../src/db/database';
import { createApp } from '../src/compose';
import { createLogger } from '../src/app';
import { createDeps } from '../src/compose';
import { createOperatorWithKey } from '../src/admin/operators';
import { stopJobs } from '../jobs/index';
import { runScript } from './run-script';

const { values } = parseArgs({
  options: {
    json: { type: 'boolean', default: false },
    email: { type: 'string', default: 'sandbox-owner@example.com' },
    password: { type: 'string', default: 'sandbox password 1' },
  },
});
const SEED = {
  operatorEmail: 'sandbox-operator@example.com',
  asset: { code: 'SUSD', name: 'Sandbox dollar', decimals: 6 },
  network: { name: 'Sandbox', kind: 'SANDBOX', environmentType: 'SANDBOX', blockTimeSeconds: 5, requiredConfirmations: 2 },
  organizationName: 'Sandbox organization',
  applicationName: 'Sandbox app',
  walletLabel: 'Sandbox deposits',
  accounts: { ACCOUNT_ID: 'Seller', PARTNER_ACCOUNT_ID: 'Partner' },
} as const;

/** Lines for stderr: what was found, made, or cannot be shown. */
const notes: string[] = [];
const note = (s: string) => notes.push(s);

await runScript('sandbox:seed', async () => {
  if (config.NODE_ENV === 'production') throw new Error('refused in production (NODE_ENV=production): the seed makes a member with a known password');
  // The wallet's root key is sealed, and sessions signed, with the keys the service uses: with DATABASE_URL, the shared ones.
  const missingKeys = missingSharedDatabaseKeys(config);
  if (missingKeys.length)
    throw new Error(`DATABASE_URL is set: the seed needs the service's keys; set ${missingKeys.map((m) => m.slice(0, m.indexOf(' '))).join(' and ')}`);
  await withDatabase(async (url) => {
    const deps = await createDeps({ ...config, JOBS: 'off', LOG_LEVEL: 'silent' }, url, createLogger('silent'));
    const yoga = createApp(deps);
    const db = deps.db;
    const out: Record<string, string> = {};
    // The REST API of the service, without a socket: the same adapter, policies and services as over HTTP.
    const rest = async (method: string, path: string, what: string, status: number, headers: Record<string, string> = {}, body?: unknown) => {
      const res = await yoga.fetch(
        `http://sandbox-seed${path}`,
        {
          method,
          headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        },
        { clientIp: '127.0.0.1' },
      );
      const text = await res.text();
      if (res.status !== status) throw new Error(`${what}: ${method} ${path} answered ${res.status} ${text}`);
      return { id: res.headers.get('location')?.split('/').pop(), body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
    };
    try {
      // The operator: its key exists only on the run that creates it.
      let operatorHeaders: Record<string, string> | null = null;
      const operator = await db.operator.findUnique({ where: { email: SEED.operatorEmail } });
      if (operator) {
        out.OPERATOR_ID = operator.id;
        note(
          `operator ${SEED.operatorEmail} exists: its key was shown when it was made (only its hash is stored); \`npm run operator:create -- --email E\` makes another`,
        );
      } else {
        const made = await createOperatorWithKey(db, { email: SEED.operatorEmail, name: 'Sandbox operator' });
        out.OPERATOR_ID = made.id;
        out.OPERATOR_KEY = made.key;
        operatorHeaders = { 'X-Operator-Key': made.key };
        note('operator created: OPERATOR_KEY is shown this once');
      }
      const asOperator = () => {
        if (!operatorHeaders)
          throw new Error(
            `the sandbox catalog is incomplete and ${SEED.operatorEmail}'s key is not known to this run: complete it with an operator key (docs/catalog-custody.md)`,
          );
        return operatorHeaders;
      };

      // The catalog: asset, SANDBOX network, asset-network, enabled.
      const asset =
        (await db.asset.findUnique({ where: { code: SEED.asset.code } }))?.id ??
        (await rest('POST', '/v1/platform/assets', 'create the asset', 201, asOperator(), SEED.asset)).id!;
      const existingNetwork = await db.network.findUnique({ where: { name: SEED.network.name } });
      if (existingNetwork && existingNetwork.kind !== 'SANDBOX') throw new Error(`a network named "${SEED.network.name}" exists and is not a SANDBOX network`);
      const network = existingNetwork?.id ?? (await rest('POST', '/v1/platform/networks', 'create the network', 201, asOperator(), SEED.network)).id!;
      const existingAn = await db.assetNetwork.findFirst({ where: { assetId: asset, networkId: network } });
      const assetNetwork =
        existingAn?.id ??
        (
          await rest('POST', '/v1/platform/asset-networks', 'create the asset-network', 201, asOperator(), {
            assetId: asset,
            networkId: network,
            decimals: SEED.asset.decimals,
            contractReference: null,
            minimumDeposit: '0',
          })
        ).id!;
      if (existingAn?.status !== 'ENABLED')
        await rest('POST', `/v1/platform/asset-networks/${assetNetwork}/enable`, 'enable the asset-network', 204, asOperator());
      Object.assign(out, { ASSET_ID: asset, NETWORK_ID: network, ASSET_NETWORK_ID: assetNetwork });

      // The organization and its owner: signed up once, then logged in.
      const credentials = { email: values.email!, password: values.password! };
      if (!(await db.member.findFirst({ where: { email: credentials.email.toLowerCase(), removedAt: null } })))
        await rest('POST', '/v1/auth/signup', 'sign up', 201, {}, { ...credentials, name: 'Sandbox owner', organizationName: SEED.organizationName });
      const login = (await rest('POST', '/v1/auth/login', `log in as ${credentials.email} (--email, --password)`, 200, {}, credentials)).body;
      const member = { Authorization: `Bearer ${String(login.accessToken)}` };
      const org = String(login.organizationId);
      Object.assign(out, { ORG_ID: org, MEMBER_ID: String(login.memberId), MEMBER_EMAIL: credentials.email, MEMBER_PASSWORD: credentials.password });

      // Application, its SANDBOX environment, a new API key.
      const application =
        (await db.application.findFirst({ where: { organizationId: org, name: SEED.applicationName }, orderBy: { createdAt: 'asc' } }))?.id ??
        String((await rest('POST', `/v1/organizations/${org}/applications`, 'create the application', 201, member, { name: SEED.applicationName })).body.id);
      const environment =
        (await db.environment.findUnique({ where: { applicationId_type: { applicationId: application, type: 'SANDBOX' } } }))?.id ??
        String((await rest('POST', `/v1/applications/${application}/environments`, 'create the environment', 201, member, { type: 'SANDBOX' })).body.id);
      const key = (await rest('POST', `/v1/environments/${environment}/api-keys`, 'create the API key', 201, member)).body;
      note('API_KEY is new on every run and shown this once (earlier ones stay valid until revoked)');
      const apiKey = { 'X-Api-Key': String(key.apiKey) };
      Object.assign(out, { APPLICATION_ID: application, ENVIRONMENT_ID: environment, API_KEY_ID: String(key.id), API_KEY: String(key.apiKey) });

      // A custodial wallet on the sandbox network, and the accounts.
      out.WALLET_ID =
        (await db.wallet.findFirst({ where: { applicationId: application, networkId: network, label: SEED.walletLabel }, orderBy: { createdAt: 'asc' } }))
          ?.id ??
        (
          await rest('POST', `/v1/applications/${application}/wallets`, 'register the wallet', 201, apiKey, {
            networkId: network,
            custodyMode: 'CUSTODIAL',
            label: SEED.walletLabel,
          })
        ).id!;
      for (const [name, accountName] of Object.entries(SEED.accounts))
        out[name] =
          (await db.account.findFirst({ where: { organizationId: org, name: accountName, mode: 'SANDBOX' }, orderBy: { createdAt: 'asc' } }))?.id ??
          (await rest('POST', `/v1/organizations/${org}/accounts`, `create the account ${accountName}`, 201, apiKey, { name: accountName })).id!;
    } finally {
      if (deps.boss) await stopJobs(deps.boss, { graceful: false }).catch(() => {});
      await deps.deliveryStatus.close().catch(() => {});
      await db.$disconnect();
    }
    for (const n of notes) process.stderr.write(`sandbox:seed: ${n}\n`);
    if (values.json) console.log(JSON.stringify(out, null, 2));
    else
      console.log(
        Object.entries(out)
          .map(([k, v]) => `export ${k}='${v.replace(/'/g, `'\\''`)}'`)
          .join('\n'),
      );
  });
});
