import { createHash } from 'node:crypto';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client';

export type { PrismaClient } from '../generated/prisma/client';
export { Prisma } from '../generated/prisma/client';

/**
 * One client per process; queries go through the pg driver adapter (no native engine).
 *
 * Every statement is a named prepared statement (its name is a hash of its SQL text), so
 * PostgreSQL parses and plans a query once per connection instead of once per request. A
 * connection lives at most 30 minutes, which bounds the statements each one keeps and lets a
 * migration's new column types reach every connection (see docs/decisions.md).
 *
 * `onStatement` sees the SQL text of every statement the client sends (BEGIN and COMMIT included),
 * as it is sent: the tests count the statements of one request with it (test/harness.ts).
 */
export function createPrisma(url: string, max: number, onConnectionError?: (err: Error) => void, onStatement?: (sql: string) => void): PrismaClient {
  return new PrismaClient({
    adapter: new PrismaPg(
      { connectionString: url, max, maxLifetimeSeconds: 1800 },
      {
        // Called once per statement sent (the adapter names each one), so it is also where statements are seen.
        statementNameGenerator: (query) => {
          onStatement?.(query.sql);
          return `p${createHash('sha1').update(query.sql).digest('base64url')}`;
        },
        // A connection the server ends (57P01 at a database shutdown) is reported here, never as an
        // unhandled 'error' event; the query it served fails on its own.
        ...(onConnectionError ? { onPoolError: onConnectionError, onConnectionError } : {}),
      },
    ),
  });
}

/** The client or an interactive transaction: services take this so they compose in one transaction. */
export type Db = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;
