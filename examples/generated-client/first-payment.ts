/**
 * A first payment through a client generated from the served OpenAPI document, as an integrator
 * writes it. Generate the types, then run it with your sandbox API key:
 *
 *   npx openapi-typescript http://localhost:8080/v1/openapi.json -o examples/generated-client/api.d.ts
 *   BASE_URL=http://localhost:8080 API_KEY=sk_test_… ORGANIZATION_ID=… APPLICATION_ID=… NETWORK_ID=… ASSET_NETWORK_ID=… \
 *     npx tsx examples/generated-client/first-payment.ts
 *
 * (`npm run sandbox:seed` prints every one of these.) Every new id is read through the generated
 * types: from the `{ id }` body (CreatedResourceResponse) where the answer has one, and from the
 * typed `Location` header where the specification fixes "201 (no body)". `npm test` type-checks
 * this file against the document the server serves and runs it against a real server
 * (test/generated-client.test.ts).
 */
import createClient from 'openapi-fetch';
import type { components, paths } from './api';

type Schemas = components['schemas'];

/** The paths whose POST answers 201 with a required `Location` header, as the document declares it. */
type CreatedWithLocation = {
  [P in keyof paths]: paths[P] extends { post: { responses: { 201: { headers: { Location: string } } } } } ? P : never;
}[keyof paths];

/**
 * The id of a resource created without a body: the last segment of its Location header. `path`
 * must be an operation whose 201 declares Location, or this does not compile.
 */
function idFromLocation<P extends CreatedWithLocation>(_path: P, response: Response): string {
  const headers: Pick<paths[P]['post']['responses'][201]['headers'], 'Location'> = { Location: response.headers.get('location') ?? '' };
  const id = headers.Location.split('/').pop();
  if (response.status !== 201 || !id) throw new Error(`expected 201 with Location, got ${response.status}`);
  return id;
}

function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`set ${name}`);
  return value;
}

/** Throws with the problem's code and detail when a call failed. */
function ok<T>(result: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (result.error !== undefined || result.data === undefined) throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`);
  return result.data;
}

export async function firstPayment() {
  const organizationId = env('ORGANIZATION_ID');
  const applicationId = env('APPLICATION_ID');
  const assetNetworkId = env('ASSET_NETWORK_ID');
  const networkId = env('NETWORK_ID');
  // One credential only: a second one (say an Authorization header) is refused with 401 MULTIPLE_CREDENTIALS.
  const client = createClient<paths>({ baseUrl: env('BASE_URL'), headers: { 'X-Api-Key': env('API_KEY') } });

  // RegisterWallet: 201 without a body (the spec's), the id is in Location.
  const walletBody: Schemas['RegisterWalletRequest'] = { networkId, custodyMode: 'CUSTODIAL', label: 'Deposits' };
  const wallet = await client.POST('/v1/applications/{applicationId}/wallets', { params: { path: { applicationId } }, body: walletBody });
  const walletId = idFromLocation('/v1/applications/{applicationId}/wallets', wallet.response);

  // CreateAccount: 201 without a body, Location; the Idempotency-Key makes a retry safe.
  const accountBody: Schemas['CreateAccountRequest'] = { name: 'Seller' };
  const created = await client.POST('/v1/organizations/{organizationId}/accounts', {
    params: { path: { organizationId }, header: { 'Idempotency-Key': `account-${Date.now()}` } },
    body: accountBody,
  });
  const accountId = idFromLocation('/v1/organizations/{organizationId}/accounts', created.response);
  const account: Schemas['AccountResponse'] = ok(await client.GET('/v1/accounts/{accountId}', { params: { path: { accountId } } }), 'GetAccount');

  // CreatePaymentIntent: 201 without a body, Location.
  const intentBody: Schemas['CreatePaymentIntentRequest'] = { assetNetworkId, amount: '1000000', beneficiaryAccountId: account.id, walletId };
  const intentCreated = await client.POST('/v1/organizations/{organizationId}/payment-intents', { params: { path: { organizationId } }, body: intentBody });
  const paymentIntentId = idFromLocation('/v1/organizations/{organizationId}/payment-intents', intentCreated.response);
  const intent: Schemas['PaymentIntentResponse'] = ok(
    await client.GET('/v1/payment-intents/{paymentIntentId}', { params: { path: { paymentIntentId } } }),
    'GetPaymentIntent',
  );

  // GetTransaction: the payment intent's transaction.
  const transaction = ok(await client.GET('/v1/transactions/{transactionId}', { params: { path: { transactionId: intent.transactionId } } }), 'GetTransaction');

  // RegisterWithdrawalDestination: 201 with { id } (CreatedResourceResponse) beside Location.
  const destination: Schemas['CreatedResourceResponse'] = ok(
    await client.POST('/v1/organizations/{organizationId}/withdrawal-destinations', {
      params: { path: { organizationId } },
      body: { networkId, address: `0x${'ab'.repeat(20)}`, label: 'Payouts' },
    }),
    'RegisterWithdrawalDestination',
  );

  return {
    walletId,
    accountId,
    accountStatus: account.status,
    paymentIntentId,
    paymentIntentStatus: intent.status,
    transactionId: transaction.id,
    transactionStatus: transaction.status,
    amount: intent.amount,
    withdrawalDestinationId: destination.id,
  };
}

// @ts-expect-error the document uses the spec's names: CreateAccountRequest, not the GraphQL input's name
export type NoGraphqlNames = Schemas['CreateAccountInput'];

if (import.meta.url === `file://${process.argv[1]}`) console.log(JSON.stringify(await firstPayment()));
