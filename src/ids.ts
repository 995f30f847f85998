import { notFound } from './errors';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: unknown): value is string => typeof value === 'string' && uuidPattern.test(value);

/**
 * Ids arrive as free strings from GraphQL; PostgreSQL refuses a malformed uuid (Prisma throws,
 * which would answer 500). A malformed id names no resource: 404, as an unknown one.
 */
export function assertId(value: unknown, what: string): string {
  if (!isUuid(value)) throw notFound(what);
  return value.toLowerCase();
}

/** Whether a Prisma error is a unique-constraint violation (P2002). */
export function isUniqueViolation(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'P2002';
}
