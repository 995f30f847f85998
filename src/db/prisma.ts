import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../generated/prisma/client';

export type { PrismaClient } from '../generated/prisma/client';
export { Prisma } from '../generated/prisma/client';

/** One client per process; queries go through the pg driver adapter (no native engine). */
export function createPrisma(url: string, max: number): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: url, max }) });
}

/** The client or an interactive transaction: services take this so they compose in one transaction. */
export type Db = Omit<PrismaClient, '$connect' | '$disconnect' | '$on' | '$transaction' | '$extends'>;
