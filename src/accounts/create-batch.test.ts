import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestApp, signUpMember, type TestApp } from '../../test/harness';
import { createInBatch, type AccountToCreate } from './create-batch';

/**
 * The group commit's isolation (issue 22): an error of the whole statement (not an item's refusal,
 * which the statement answers per item) is retried item by item, so only the item that caused it
 * fails. No public request can reach this (assertOrganization and the input gate refuse first), so
 * the batcher is called as createAccount calls it, with an organization that does not exist (a
 * foreign-key violation of the whole statement).
 */
let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

test('a statement-level error fails only its item; the others of the batch commit with their audit entries', async () => {
  const m = await signUpMember(app);
  const item = (organizationId: string, name: string): AccountToCreate => ({
    organizationId,
    name,
    reference: null,
    accountHolderId: null,
    mode: 'PRODUCTION',
    applicationId: null,
    actor: { principal: null, requestId: `batch-${name}` },
    now: app.deps.clock.now(),
  });
  // Queued in the same turn of the event loop: one batch.
  const { result, statements } = await app.sqlStatements(() =>
    Promise.allSettled([
      createInBatch(app.deps.db, item(m.organizationId, 'Good 1'))!,
      createInBatch(app.deps.db, item(crypto.randomUUID(), 'No such organization'))!,
      createInBatch(app.deps.db, item(m.organizationId, 'Good 2'))!,
    ]),
  );
  // The batch of three, then each alone.
  expect(statements).toHaveLength(4);
  expect(result[0]).toMatchObject({ status: 'fulfilled', value: { row: { name: 'Good 1' } } });
  expect(result[2]).toMatchObject({ status: 'fulfilled', value: { row: { name: 'Good 2' } } });
  expect(result[1]).toMatchObject({ status: 'rejected', reason: expect.objectContaining({ code: '23503' }) });
  const names = (await app.deps.db.account.findMany({ where: { organizationId: m.organizationId }, select: { name: true } })).map((a) => a.name).sort();
  expect(names).toEqual(['Good 1', 'Good 2']);
  const entries = await app.deps.db.auditLogEntry.findMany({ where: { requestId: { startsWith: 'batch-' }, organizationId: m.organizationId } });
  expect(entries.map((e) => e.requestId).sort()).toEqual(['batch-Good 1', 'batch-Good 2']);
});
