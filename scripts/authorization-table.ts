// npm run docs:authorization — writes docs/authorization.md from the route table (rest/routes.ts).
// test/docs.test.ts fails when the checked-in page differs from what this prints.
import { writeFileSync } from 'node:fs';
import { authorizationPage } from '../rest/authorization-page';

writeFileSync(new URL('../docs/authorization.md', import.meta.url), authorizationPage());
console.log('wrote docs/authorization.md');
