import { readFileSync } from 'node:fs';
import { expect, test } from 'vitest';
import { authorizationPage } from '../rest/authorization-page';
import { routes } from '../rest/routes';
import { settingNames } from '../src/config';

test('docs/authorization.md is generated from the route table (run `npm run docs:authorization`)', () => {
  expect(readFileSync(new URL('../docs/authorization.md', import.meta.url), 'utf8')).toBe(authorizationPage());
});

test('every route of the spec is in the route table exactly once', () => {
  const spec = readFileSync(new URL('../docs/spec/api-v1.md', import.meta.url), 'utf8');
  const specRoutes = [...spec.matchAll(/\| (GET|POST|DELETE) \| `(\/v1\/[^`]+)`/g)].map((m) => `${m[1]} ${m[2]}`);
  const table = new Set(routes.map((r) => `${r.method} ${r.path}`));
  const missing = specRoutes.filter((r) => !table.has(r.replace('<chain>', 'tron')));
  expect(missing).toEqual([]);
  expect(table.size).toBe(routes.length);
});

test('README.md names every setting of src/config.ts', () => {
  const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
  expect(settingNames.filter((name) => !readme.includes('`' + name + '`'))).toEqual([]);
});
