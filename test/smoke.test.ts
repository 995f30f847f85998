import { afterAll, beforeAll, expect, test } from 'vitest';
import { createTestApp, signUpMember, type TestApp } from './harness';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

test('a member signs up, logs in and reads itself through GraphQL', async () => {
  const m = await signUpMember(app);
  const r = await app.gql<{ viewer: { id: string; role: string } }>('{ viewer { id role } }', {}, m.headers);
  expect(r.errors).toBeUndefined();
  expect(r.data!.viewer).toEqual({ id: m.memberId, role: 'OWNER' });
});
