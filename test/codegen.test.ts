import { expect, test } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { relative, resolve } from 'node:path';
import { generate } from '@graphql-codegen/cli';
import config from '../codegen';

/**
 * The typed dashboard operations (examples/dashboard/generated/) are what `npm run codegen`
 * generates from schema.graphql and examples/dashboard/operations.ts today: offline, in memory,
 * compared file by file. A schema or operation change without `npm run codegen` fails here (and
 * `npm run typecheck` compiles the generated files with examples/dashboard/client.ts).
 */
test('examples/dashboard/generated is up to date (run `npm run codegen` after changing the schema or the operations)', async () => {
  const root = resolve(import.meta.dirname, '..');
  const outputs = (await generate({ ...config, cwd: root, silent: true }, false)) as { filename: string; content: string }[];
  const generated = Object.fromEntries(outputs.map((o) => [relative(root, resolve(root, o.filename)), o.content]));
  const dir = 'examples/dashboard/generated';
  const checkedIn = Object.fromEntries(readdirSync(resolve(root, dir)).map((f) => [`${dir}/${f}`, readFileSync(resolve(root, dir, f), 'utf8')]));
  expect(Object.keys(generated).sort()).toEqual(Object.keys(checkedIn).sort());
  for (const [file, content] of Object.entries(generated)) expect(checkedIn[file], `${file}: run npm run codegen`).toBe(content);
}, 60_000);
