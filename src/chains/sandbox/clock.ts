import type { Clock } from '../../clock';
import type { Db, RawDb } from '../../db/prisma';

/**
 * The sandbox clock of an organization (Stripe's test clocks): the real clock plus the offset
 * the integrator advanced with `POST /v1/sandbox/clock/advance`. Only SANDBOX rules read it (the
 * expiry of sandbox payment intents); production never does.
 */
export async function sandboxOffsetMs(db: RawDb, organizationId: string): Promise<number> {
  const [row] = await db.$queryRaw<{ offsetMs: bigint }[]>`SELECT "offsetMs" FROM "SandboxClock" WHERE "organizationId" = ${organizationId}::uuid`;
  return row ? Number(row.offsetMs) : 0;
}

/** Now, as the organization's sandbox sees it. */
export async function sandboxNow(db: RawDb, clock: Clock, organizationId: string): Promise<Date> {
  return new Date(clock.now().getTime() + (await sandboxOffsetMs(db, organizationId)));
}

/** Advances the organization's sandbox clock by `seconds` (in the caller's transaction); answers the new sandbox now. */
export async function advanceSandboxClock(tx: Db, clock: Clock, organizationId: string, seconds: number): Promise<Date> {
  const ms = BigInt(seconds) * 1000n;
  const row = await tx.sandboxClock.upsert({
    where: { organizationId },
    create: { organizationId, offsetMs: ms },
    update: { offsetMs: { increment: ms } },
    select: { offsetMs: true },
  });
  return new Date(clock.now().getTime() + Number(row.offsetMs));
}

/**
 * "Now" for the rules of an organization's environment: the real clock in production, the
 * organization's sandbox clock (which the integrator may advance) in a sandbox.
 */
export async function nowFor(db: RawDb, clock: Clock, organizationId: string, environmentType: 'SANDBOX' | 'PRODUCTION'): Promise<Date> {
  return environmentType === 'SANDBOX' ? sandboxNow(db, clock, organizationId) : clock.now();
}
