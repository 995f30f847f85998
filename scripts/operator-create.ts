// npm run operator:create -- --email ops@example.com [--name "Ops"] — creates a platform operator
// and prints its key once. The key goes in the X-Operator-Key header of /v1/admin/* and /v1/platform/*.
// While `npm start` runs on the same DATA_DIR, its embedded PostgreSQL is used.
import '../src/boot'; // first: an invalid setting is one line, not a stack
import { parseArgs } from 'node:util';
import { withDatabase } from '../src/db/database';
import { runScript } from './run-script';
import { createPrisma } from '../src/db/prisma';
import { createOperatorWithKey } from '../src/admin/operators';

const { values } = parseArgs({ options: { email: { type: 'string' }, name: { type: 'string' } } });
if (!values.email || !/^[^@\s]+@[^@\s]+$/.test(values.email)) {
  console.error('usage: npm run operator:create -- --email ops@example.com [--name "Name"]');
  process.exit(2);
}
// Migrates first when it can (as `npm start` does), then writes as the service's role.
await runScript('operator:create', () =>
  withDatabase(async (url) => {
    const db = createPrisma(url, 2);
    try {
      const op = await createOperatorWithKey(db, { email: values.email!, name: values.name });
      console.log(`operator ${op.id} (${op.email}) created.\nX-Operator-Key: ${op.key}\nThis key is shown once; only its hash is stored.`);
    } finally {
      await db.$disconnect();
    }
  }),
);
