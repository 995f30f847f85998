// npm run operator:create -- --email ops@example.com [--name "Ops"] — creates a platform operator
// and prints its key once. The key goes in the X-Operator-Key header of /v1/admin/* and /v1/platform/*.
import { parseArgs } from 'node:util';
import { withDatabase } from '../src/db/database';
import { runScript } from './run-script';
import { createPrisma } from '../src/db/prisma';
import { newOperatorKey } from '../src/auth/secrets';

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
      const { key, keyHash } = newOperatorKey();
      const email = values.email!.toLowerCase();
      const op = await db.$transaction(async (tx) => {
        const created = await tx.operator.create({ data: { email, name: values.name ?? email, keyHash } });
        await tx.auditLogEntry.create({
          data: { actorType: 'SYSTEM', entityType: 'Operator', entityId: created.id, action: 'operator.created', after: { email } },
        });
        return created;
      });
      console.log(`operator ${op.id} (${op.email}) created.\nX-Operator-Key: ${key}\nThis key is shown once; only its hash is stored.`);
    } finally {
      await db.$disconnect();
    }
  }),
);
