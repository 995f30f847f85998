// npm run schema — prints schema.graphql from the code (sorted). A test fails when the file differs.
import { writeFileSync } from 'node:fs';
import { printedSchema } from '../src/schema';

writeFileSync(new URL('../schema.graphql', import.meta.url), printedSchema());
console.log('wrote schema.graphql');
