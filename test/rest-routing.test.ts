import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { routes } from '../rest/routes';
import { createTestApp, type TestApp } from './harness';

/**
 * The REST router (rest/adapter.ts: the routes of a path's number of segments, in table order)
 * answers as a scan of the whole route table does: every route's path reaches it (never 404 or 405 for its own method), and a method no route
 * of the path takes answers 405 with an Allow header naming, in table order, the methods of every
 * route whose template matches the path — computed here from the templates alone.
 */

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app?.close();
});

/** The path of a template with each parameter filled (a UUID: the adapter answers 404 for another value before any look-up). */
const fill = (template: string, id: string) => template.replace(/\{\w+\}/g, id);
/** Whether a template matches a concrete path: a parameter is one non-empty segment, a trailing slash optional. */
const matches = (template: string, path: string) => {
  const t = template.replace(/\/$/, '').split('/');
  const p = path.replace(/\/$/, '').split('/');
  return t.length === p.length && t.every((seg, i) => (seg.startsWith('{') ? p[i] !== '' : seg === p[i]));
};
const allowOf = (path: string) => [...new Set(routes.filter((r) => matches(r.path, path)).map((r) => r.method))].join(', ');

describe('the REST router', () => {
  const id = crypto.randomUUID();
  const paths = [...new Set(routes.map((r) => fill(r.path, id)))];

  test('every route is reached by its own method; a path with no route of a method answers 405 naming every method of its routes', async () => {
    expect(paths.length).toBeGreaterThan(50);
    for (const path of paths) {
      for (const variant of path.endsWith('/') ? [path, path.slice(0, -1)] : [path, `${path}/`]) {
        const own = routes.find((r) => matches(r.path, variant))!;
        const reached = await app.rest(own.method, variant);
        expect([404, 405].includes(reached.status) && ['ROUTE_NOT_FOUND', 'METHOD_NOT_ALLOWED'].includes(reached.body?.code), `${own.method} ${variant}`).toBe(
          false,
        );
        const refused = await app.rest('PATCH', variant);
        expect(refused.status, `PATCH ${variant}`).toBe(405);
        expect(refused.headers.get('allow'), `PATCH ${variant}`).toBe(allowOf(variant));
      }
    }
  });

  test('a path no template matches answers 404, whatever its length and last segment', async () => {
    for (const path of ['/v1/organizations/x/no-such', `/v1/organizations/${id}/accounts/${id}/more/and-more/x`, '/v1//accounts', '/v1/sandbox/nothing']) {
      const r = await app.rest('GET', path);
      expect(r.status, path).toBe(404);
      expect(r.body.code, path).toBe('ROUTE_NOT_FOUND');
    }
  });
});
