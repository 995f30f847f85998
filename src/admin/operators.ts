import type { PrismaClient } from '../db/prisma';
import { newOperatorKey } from '../auth/secrets';

/**
 * A platform operator and its audit entry, in one transaction; answers the key, which exists only
 * here (its hash is stored). Used by `npm run operator:create` and `npm run sandbox:seed`.
 */
export async function createOperatorWithKey(db: PrismaClient, input: { email: string; name?: string }): Promise<{ id: string; email: string; key: string }> {
  const { key, keyHash } = newOperatorKey();
  const email = input.email.toLowerCase();
  const op = await db.$transaction(async (tx) => {
    const created = await tx.operator.create({ data: { email, name: input.name ?? email, keyHash } });
    await tx.auditLogEntry.create({
      data: { actorType: 'SYSTEM', entityType: 'Operator', entityId: created.id, action: 'operator.created', after: { email } },
    });
    return created;
  });
  return { id: op.id, email: op.email, key };
}
