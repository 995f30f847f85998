import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createRequire } from 'node:module';
import { mkdirSync, readFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import Chromium from '@sparticuz/chromium';
import { chromium, type Browser, type Page } from 'playwright-core';
import { generate } from '@graphql-codegen/cli';
import codegenConfig from '../console/codegen';
import { createPrisma, type PrismaClient } from '../src/db/prisma';
import { buildConsole } from '../console/build.mjs';
import { cloneTemplateDatabase, pollUntil, serviceEnv, startService, type ServiceProcess } from './process-harness';
import { createApiKey, PASSWORD, signUpMember, type RestApp } from './harness';
import { setupSandboxCatalog } from './money-helpers';
import { registerEndpoint, startReceiver } from './webhook-helpers';

/**
 * The operator console (issue 23) in a real headless Chromium (@sparticuz/chromium, driven by
 * playwright-core) against the service as `npm start` runs it (a child process: the job runner
 * delivers the webhooks, nothing is mocked). Each page is checked with axe-core in the browser and
 * photographed into docs/console/*.png (shown in docs/console.md).
 */
const require = createRequire(import.meta.url);
const SHOTS = fileURLToPath(new URL('../docs/console/', import.meta.url));
const axeSource = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

let svc: ServiceProcess;
let db: PrismaClient;
let browser: Browser;
let ok: Awaited<ReturnType<typeof startReceiver>>;
let failing: Awaited<ReturnType<typeof startReceiver>>;
let failingAnswers503 = true;
let catalog: Awaited<ReturnType<typeof setupSandboxCatalog>> & { operator: { key?: string } };
let operatorKey: string;

type Member = Awaited<ReturnType<typeof signUpMember>>;
interface Org {
  member: Member;
  key: Awaited<ReturnType<typeof createApiKey>>;
}
let a: Org & { okEndpoint: string; deadEndpoint: string };
let b: Org & { endpoint: string };

beforeAll(async () => {
  // The assets the process serves are those of the sources in this checkout.
  await buildConsole();
  const databaseUrl = await cloneTemplateDatabase('console');
  db = createPrisma(databaseUrl, 2);
  ok = await startReceiver();
  failing = await startReceiver((_r, res) => {
    res.statusCode = failingAnswers503 ? 503 : 204;
    res.end(failingAnswers503 ? 'upstream unavailable' : undefined);
  });
  [svc, browser] = await Promise.all([
    startService({ databaseUrl, env: await serviceEnv() }),
    chromium.launch({ executablePath: await Chromium.executablePath(), args: Chromium.args.filter((a) => a !== '--single-process'), headless: true }),
  ]);
  const app: RestApp & { deps: { db: PrismaClient } } = { rest: svc.rest, deps: { db } };
  catalog = await setupSandboxCatalog(app);
  operatorKey = catalog.operator.headers['x-operator-key']!;
  const org = async (): Promise<Org> => {
    const member = await signUpMember(app);
    return { member, key: await createApiKey(app, member, 'SANDBOX') };
  };
  const [oa, ob] = [await org(), await org()];
  a = { ...oa, okEndpoint: (await registerEndpoint(app, oa.member, ok.url)).id, deadEndpoint: (await registerEndpoint(app, oa.member, failing.url)).id };
  b = { ...ob, endpoint: (await registerEndpoint(app, ob.member, ok.url)).id };
  mkdirSync(SHOTS, { recursive: true });
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
  await ok?.close();
  await failing?.close();
  await db?.$disconnect();
});

/** An event of the organization (a sandbox withdrawal destination registered): one delivery per endpoint. Answers the event id. */
async function emitEvent(o: Org): Promise<string> {
  const address = `0x${randomUUID().replaceAll('-', '')}${randomUUID().slice(0, 8)}`;
  const r = await svc.rest('POST', `/v1/organizations/${o.member.organizationId}/withdrawal-destinations`, {
    headers: o.key.headers,
    body: { networkId: catalog.networkId, address },
  });
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
}

/**
 * Emits events of `o` until a row matching `selector` is in the page. The page says Live once the
 * socket is acknowledged; its subscribe message may still be on its way, so the first change can
 * go before it (graphql-ws has no acknowledgement per subscription).
 */
async function emitUntilShown(page: Page, o: Org, selector: string) {
  const row = page.locator(selector).first();
  for (let i = 0; ; i++) {
    await emitEvent(o);
    try {
      await row.waitFor({ timeout: 5_000 });
      return row;
    } catch (e) {
      if (i === 2) throw e;
    }
  }
}

const deliveriesOf = async (o: Org, endpointId: string) =>
  (await svc.rest('GET', `/v1/webhook-endpoints/${endpointId}/deliveries?limit=100`, { headers: o.member.headers })).body as {
    id: string;
    status: string;
    createdAt: string;
  }[];

/** A tab of its own (sessionStorage is per tab), with a locale ICU knows. Every page error fails the test. */
async function newTab(): Promise<Page> {
  const context = await browser.newContext({ locale: 'en-GB', viewport: { width: 1366, height: 900 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('requestfailed', (r) => errors.push(`request failed: ${r.url()}`));
  (page as Page & { errors: string[] }).errors = errors;
  await page.goto(`${svc.url}/console`);
  return page;
}
const pageErrors = (page: Page) => (page as Page & { errors: string[] }).errors;

async function signInMember(page: Page, m: Member, password = PASSWORD) {
  await page.getByRole('radio', { name: /Organization member/ }).check();
  await page.getByLabel('Email', { exact: true }).fill(m.email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}
async function signInOperator(page: Page, key: string) {
  await page.getByLabel('Operator key', { exact: true }).fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** axe-core in the page (WCAG 2 A and AA: labels, contrast, landmarks...): no violation. */
async function expectAccessible(page: Page, what: string) {
  await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const r = await (
      window as unknown as { axe: { run: (c: unknown, o: unknown) => Promise<{ violations: { id: string; nodes: { target: unknown }[] }[] }> } }
    ).axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } });
    return r.violations.map((v) => ({ id: v.id, targets: v.nodes.map((n) => n.target) }));
  });
  expect(violations, what).toEqual([]);
}

async function shoot(page: Page, name: string) {
  await page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
}

/** Where the credential must never be: the URL and the page's text. */
async function expectNoCredentialShown(page: Page, ...secrets: string[]) {
  const text = await page.locator('body').innerText();
  for (const s of secrets) {
    expect(page.url()).not.toContain(s);
    expect(text).not.toContain(s);
  }
}

test('the console’s typed operations are what GraphQL Code Generator makes of schema.graphql now (npm run codegen:console)', async () => {
  const outputs = (await generate({ ...codegenConfig, cwd: fileURLToPath(new URL('..', import.meta.url)), silent: true }, false)) as {
    filename: string;
    content: string;
  }[];
  expect(outputs.length).toBeGreaterThan(0);
  for (const o of outputs) expect(readFileSync(fileURLToPath(new URL(`../${o.filename}`, import.meta.url)), 'utf8'), o.filename).toBe(o.content);
}, 60_000);

describe('the operator console in a real browser, against npm start', () => {
  test('GET /console serves the page and its assets from this process: nothing from elsewhere', async () => {
    const res = await fetch(`${svc.url}/console`, { headers: { accept: 'text/html' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
    const html = await res.text();
    expect(html).not.toMatch(/\b(?:https?|wss?):\/\//i);
    for (const ref of html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)) expect((await fetch(svc.url + ref[1])).status).toBe(200);
    // `npm run start:api` (an API process of a fleet, on the same database) serves the same page.
    const api = await startService({ databaseUrl: svc.databaseUrl, env: await serviceEnv(), role: 'api' });
    try {
      const page = await fetch(`${api.url}/console`, { headers: { accept: 'text/html' } });
      expect(page.status).toBe(200);
      expect(await page.text()).toBe(html);
    } finally {
      await api.stop();
    }
  }, 60_000);

  test('a wrong credential gets a clear message (operator key and member password), and signs nobody in', async () => {
    const page = await newTab();
    for (const wrong of ['op_not_a_real_key', `op_${'A'.repeat(40)}`]) {
      await signInOperator(page, wrong);
      await expect.poll(() => page.getByRole('alert').innerText(), { timeout: 10_000 }).toBe('Sign-in failed: this operator key is not valid.');
    }
    await expectAccessible(page, 'sign-in with an error');
    await shoot(page, 'sign-in');
    await signInMember(page, a.member, 'not the password');
    await expect.poll(() => page.getByRole('alert').innerText(), { timeout: 10_000 }).toBe('Sign-in failed: wrong email or password.');
    expect(await page.getByRole('navigation', { name: 'Pages' }).count()).toBe(0);
    expect(pageErrors(page)).toEqual([]);
    await page.context().close();
  }, 60_000);

  test('a member sees a delivery arrive live within a second of its commit, opens it, redelivers a dead letter and sees the new delivery appear', async () => {
    const page = await newTab();
    await signInMember(page, a.member);
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    // The credential is in no URL, nowhere on the page.
    await expectNoCredentialShown(page, a.member.tokens.accessToken, PASSWORD);

    // Live: the delivery to the healthy endpoint appears as its status change commits.
    const before = Date.now();
    const row = await emitUntilShown(page, a, `tr[data-endpoint-id="${a.okEndpoint}"][data-kind="DELIVERED"]`);
    const seenAt = Date.now();
    const committedAt = Date.parse((await row.getAttribute('data-at'))!);
    expect(committedAt).toBeGreaterThanOrEqual(before - 1000);
    expect(seenAt - committedAt, 'from the commit of the change to the row in the page').toBeLessThan(1000);
    const deliveryId = (await row.getAttribute('data-delivery-id'))!;
    await expectAccessible(page, 'live stream');
    await shoot(page, 'stream');

    // Pausing keeps what arrives meanwhile.
    await page.getByRole('button', { name: 'Pause' }).click();
    const rowsWhilePaused = await page.locator('tbody tr').count();
    await emitEvent(a);
    await expect.poll(() => page.getByRole('button', { name: /^Resume \(\d+ waiting\)$/ }).innerText(), { timeout: 15_000 }).not.toBe('Resume (0 waiting)');
    expect(await page.locator('tbody tr').count()).toBe(rowsWhilePaused);
    await page.getByRole('button', { name: /^Resume/ }).click();
    await expect.poll(() => page.locator('tbody tr').count(), { timeout: 10_000 }).toBeGreaterThan(rowsWhilePaused);

    // Open it: payload, attempts, the signature headers sent.
    await page.locator(`a[href="#/deliveries/${deliveryId}"]`).first().click();
    await expect.poll(() => page.getByTestId('delivery-id').innerText(), { timeout: 10_000 }).toBe(deliveryId);
    const detail = await page.locator('main').innerText();
    expect(detail).toContain('withdrawal_destination.registered');
    expect(detail).toContain('X-Webhook-Timestamp');
    expect(detail).toContain(`X-Webhook-Delivery-Id: ${deliveryId}`);
    await expect.poll(() => page.getByRole('table', { name: 'Attempts' }).locator('tbody tr').count(), { timeout: 10_000 }).toBe(1);
    expect(await page.getByLabel('Payload').innerText()).toContain('"WithdrawalDestinationId"');
    await expectAccessible(page, 'delivery detail');
    await shoot(page, 'delivery');

    // Dead letters: the failing endpoint's deliveries run their whole schedule (sandbox fast-forward).
    const dead = await pollUntil(
      'two first attempts failed',
      () => deliveriesOf(a, a.deadEndpoint),
      (ds) => ds.length >= 2 && ds.every((d) => d.status === 'AWAITING_RETRY'),
      30_000,
      250,
    );
    for (const d of dead) {
      const ff = await svc.rest('POST', `/v1/sandbox/webhook-deliveries/${d.id}/fast-forward`, { headers: a.key.headers, body: { attempts: 'REMAINING' } });
      expect([200, 409], ff.text).toContain(ff.status);
    }
    await pollUntil(
      'both dead-lettered',
      () => deliveriesOf(a, a.deadEndpoint),
      (ds) => ds.every((d) => d.status === 'DEAD_LETTER'),
      60_000,
      250,
    );
    failingAnswers503 = false;

    // A second tab on the live stream, to see the redelivery appear.
    const watcher = await newTab();
    await signInMember(watcher, a.member);
    await watcher.getByRole('status').filter({ hasText: 'Live' }).waitFor();

    await page.getByRole('link', { name: 'Dead letters' }).click();
    await page.getByLabel('Endpoint').selectOption(a.deadEndpoint);
    await expect.poll(() => page.getByRole('table', { name: 'Dead-lettered deliveries' }).locator('tbody tr').count(), { timeout: 15_000 }).toBe(dead.length);
    await expectAccessible(page, 'dead letters');
    await shoot(page, 'dead-letters');
    const [first, second] = [...dead].sort((x, y) => x.createdAt.localeCompare(y.createdAt));
    await page.getByRole('button', { name: `Redeliver ${first!.id}` }).click();
    const redelivered = page.locator(`tr[data-delivery-id="${first!.id}"] a`).filter({ hasText: /./ }).last();
    await expect.poll(() => redelivered.innerText(), { timeout: 10_000 }).not.toBe(first!.id);
    const newId = await redelivered.innerText();
    // It appears in the other tab's live stream, and is delivered.
    await watcher.locator(`tr[data-delivery-id="${newId}"]`).first().waitFor({ timeout: 15_000 });
    await watcher.locator(`tr[data-delivery-id="${newId}"][data-kind="DELIVERED"]`).first().waitFor({ timeout: 15_000 });
    // The action was the member's own audited API call.
    const audit = await db.auditLogEntry.findFirstOrThrow({ where: { entityId: newId, action: 'webhook_delivery.redelivered' } });
    expect({ type: audit.actorType, id: audit.actorId }).toEqual({ type: 'MEMBER', id: a.member.memberId });

    // Its detail links to the original.
    await redelivered.click();
    await expect.poll(() => page.getByTestId('delivery-id').innerText(), { timeout: 10_000 }).toBe(newId);
    expect(await page.getByRole('link', { name: first!.id }).count()).toBe(1);

    // Bulk: the endpoint over a time range; the one already redelivered is not sent twice.
    await page.getByRole('link', { name: 'Dead letters' }).click();
    await page.getByLabel('Endpoint').selectOption(a.deadEndpoint);
    await page.getByRole('button', { name: 'Redeliver all in range' }).click();
    await expect.poll(() => page.locator('.progress').innerText(), { timeout: 20_000 }).toContain(`COMPLETED: ${dead.length - 1} of ${dead.length - 1}`);
    expect(await page.locator('#bulk-progress').getAttribute('value')).toBe(String(dead.length - 1));
    await pollUntil(
      'the bulk redelivery delivered',
      () => deliveriesOf(a, a.deadEndpoint),
      (ds) => ds.some((d) => d.status === 'DELIVERED' && d.id !== newId),
      20_000,
      250,
    );
    expect(second).toBeDefined();

    // Endpoint health.
    await page.getByRole('link', { name: 'Endpoint health' }).click();
    const health = page.getByRole('table', { name: /Endpoints/ });
    await expect.poll(() => health.innerText(), { timeout: 15_000 }).toContain('% of');
    expect(await health.innerText()).toContain(failing.url);
    await expectAccessible(page, 'endpoint health');
    await shoot(page, 'endpoints');

    // Keyboard: the skip link comes first, then the pages in order; Enter follows one; the skip link focuses the content.
    const focused = () => page.evaluate(() => document.activeElement?.textContent ?? '');
    await page.getByText('Skip to content').focus();
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Live deliveries');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Dead letters');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.evaluate(() => location.hash), { timeout: 10_000 }).toBe('#/dead-letters');
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Shift+Tab');
    expect(await focused()).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('main');

    await expectNoCredentialShown(page, a.member.tokens.accessToken, PASSWORD);
    expect(pageErrors(page)).toEqual([]);
    expect(pageErrors(watcher)).toEqual([]);
    await watcher.context().close();
    await page.context().close();
  }, 180_000);

  test('a member never sees another organization’s data', async () => {
    const page = await newTab();
    await signInMember(page, b.member);
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    await emitEvent(a);
    await emitUntilShown(page, b, `tr[data-endpoint-id="${b.endpoint}"]`);
    // Let organization A's changes (emitted first) arrive if they were ever going to.
    await new Promise((r) => setTimeout(r, 1500));
    const endpointsShown = await page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-endpoint-id')));
    expect(new Set(endpointsShown)).toEqual(new Set([b.endpoint]));
    // A's delivery by its URL: refused, nothing of it shown.
    const aDelivery = (await deliveriesOf(a, a.okEndpoint))[0]!;
    await page.evaluate((id) => (location.hash = `#/deliveries/${id}`), aDelivery.id);
    await page.getByRole('alert').waitFor();
    expect(await page.locator('main').innerText()).not.toContain('withdrawal_destination.registered');
    // Its endpoints and dead letters: its own only (organization A's dead letters are the server's to keep out).
    await page.getByRole('link', { name: 'Dead letters' }).click();
    await expect.poll(() => page.locator('main').innerText(), { timeout: 15_000 }).toContain('No dead-lettered delivery.');
    expect(await page.locator('main').innerText()).not.toContain(a.deadEndpoint);
    await page.getByRole('link', { name: 'Endpoint health' }).click();
    const health = page.getByRole('table', { name: /Endpoints/ });
    await expect.poll(() => health.locator('tbody tr').count(), { timeout: 15_000 }).toBe(1);
    expect(await health.innerText()).toContain(b.endpoint);
    // Operator pages are not offered, and say why when reached.
    expect(await page.getByRole('link', { name: 'Platform dashboard' }).count()).toBe(0);
    await page.evaluate(() => (location.hash = '#/dashboard'));
    await expect.poll(() => page.locator('main').innerText(), { timeout: 10_000 }).toContain('sign in with an operator key');
    expect(pageErrors(page)).toEqual([]);
    await page.context().close();
  }, 90_000);

  test('an operator follows the whole platform live, every organization’s dead letters (redelivers one, audited as the operator), endpoint health, the stuck money and the platform dashboard', async () => {
    const page = await newTab();
    await signInOperator(page, operatorKey);
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    await emitUntilShown(page, a, `tr[data-endpoint-id="${a.okEndpoint}"]`);
    await emitUntilShown(page, b, `tr[data-endpoint-id="${b.endpoint}"]`);
    // The organization filter narrows the stream to one organization.
    await page.getByLabel('Organization').fill(b.member.organizationId);
    await expect
      .poll(async () => new Set(await page.locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-endpoint-id')))))
      .toEqual(new Set([b.endpoint]));
    await expectAccessible(page, 'operator stream');
    await expectNoCredentialShown(page, operatorKey);

    // Every organization's dead letters: the operator opens one of A's, reads its payload and redelivers it,
    // an audited call under the operator's identity.
    const deadOfA = (await deliveriesOf(a, a.deadEndpoint)).filter((d) => d.status === 'DEAD_LETTER');
    expect(deadOfA.length).toBeGreaterThan(0);
    await page.getByRole('link', { name: 'Dead letters' }).click();
    const deadRow = page.locator(`tr[data-delivery-id="${deadOfA[0]!.id}"]`);
    await deadRow.waitFor({ timeout: 15_000 });
    expect(await deadRow.innerText()).toContain(a.member.organizationId);
    await expectAccessible(page, 'operator dead letters');
    await page.getByRole('button', { name: `Redeliver ${deadOfA[0]!.id}` }).click();
    const byOperator = deadRow.locator('a').last();
    await expect.poll(() => byOperator.innerText(), { timeout: 10_000 }).not.toBe(deadOfA[0]!.id);
    const operatorAudit = await db.auditLogEntry.findFirstOrThrow({
      where: { entityId: await byOperator.innerText(), action: 'webhook_delivery.redelivered' },
    });
    const operatorRow = await db.operator.findFirstOrThrow({ where: { id: operatorAudit.actorId! } });
    expect({ type: operatorAudit.actorType, organizationId: operatorAudit.organizationId }).toEqual({
      type: 'OPERATOR',
      organizationId: a.member.organizationId,
    });
    expect(operatorRow.id).toBe(operatorAudit.actorId);
    await page.locator(`a[href="#/deliveries/${deadOfA[0]!.id}"]`).click();
    await expect.poll(() => page.getByTestId('delivery-id').innerText(), { timeout: 10_000 }).toBe(deadOfA[0]!.id);
    expect(await page.getByLabel('Payload').innerText()).toContain('"WithdrawalDestinationId"');
    // One organization's endpoint health, computed by the server.
    await page.getByRole('link', { name: 'Endpoint health' }).click();
    await page.getByLabel('Organization').fill(a.member.organizationId);
    const health = page.getByRole('table', { name: /Endpoints/ });
    await expect.poll(() => health.innerText(), { timeout: 15_000 }).toContain(failing.url);
    expect(await health.locator('tbody tr').count()).toBe(2);
    await expectAccessible(page, 'operator endpoint health');

    await page.getByRole('link', { name: 'Stuck money' }).click();
    await page.getByLabel(/Idle for more than/).fill('0');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.locator('main').innerText(), { timeout: 15_000 }).toMatch(/Nothing is stuck|Kind/);
    await expectAccessible(page, 'stuck money');
    await shoot(page, 'stuck');

    await page.getByRole('link', { name: 'Platform dashboard' }).click();
    await expect.poll(() => page.locator('main').innerText(), { timeout: 15_000 }).toContain('Organizations');
    // The charts draw once their series arrive, after the page's text: wait for them too.
    await expect.poll(() => page.locator('figure.chart canvas').count(), { timeout: 15_000 }).toBeGreaterThan(0);
    await expectAccessible(page, 'platform dashboard');
    await shoot(page, 'dashboard');
    await expectNoCredentialShown(page, operatorKey);
    expect(pageErrors(page)).toEqual([]);
    await page.context().close();
  }, 90_000);
});
