// Builds the package with the TypeScript compiler: dist/esm (ES modules) and dist/cjs (CommonJS),
// each with its .d.ts. Run by `npm install` in the repository (prepare) and by `npm pack`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(join(here, 'dist'), { recursive: true, force: true });
for (const project of ['tsconfig.json', 'tsconfig.cjs.json']) execFileSync(process.execPath, [tsc, '-p', join(here, project)], { stdio: 'inherit' });
// The package is "type": "module": mark the CommonJS build as such for Node's loader.
mkdirSync(join(here, 'dist/cjs'), { recursive: true });
writeFileSync(join(here, 'dist/cjs/package.json'), '{ "type": "commonjs" }\n');
