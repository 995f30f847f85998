import { Prisma } from '../generated/prisma/client';
import type { Db } from '../db/prisma';
import { aggregateIdField, eventTypes } from './events';

/**
 * Whether a delivery belongs to the sandbox or to production. Endpoints are the organization's and
 * receive every event (the spec), so neither the endpoint nor the delivery carries a mode: the
 * event's aggregate does. Transactions, payment intents, settlements, refunds, withdrawals and
 * withdrawal destinations record their environment type; a deposit takes its network's. An
 * aggregate that does not exist (or an event of a type added later without a row here) has no
 * mode: null, which no API key and no sandbox facility accepts.
 */
const aggregateTable = {
  TransactionId: Prisma.sql`SELECT "environmentType"::text FROM "Transaction" WHERE "id" = ev."aggregateId"`,
  PaymentIntentId: Prisma.sql`SELECT "environmentType"::text FROM "PaymentIntent" WHERE "id" = ev."aggregateId"`,
  DepositId: Prisma.sql`SELECT n."environmentType"::text FROM "Deposit" x JOIN "Network" n ON n."id" = x."networkId" WHERE x."id" = ev."aggregateId"`,
  SettlementId: Prisma.sql`SELECT "environmentType"::text FROM "Settlement" WHERE "id" = ev."aggregateId"`,
  RefundId: Prisma.sql`SELECT "environmentType"::text FROM "Refund" WHERE "id" = ev."aggregateId"`,
  WithdrawalId: Prisma.sql`SELECT "environmentType"::text FROM "Withdrawal" WHERE "id" = ev."aggregateId"`,
  WithdrawalDestinationId: Prisma.sql`SELECT "environmentType"::text FROM "WithdrawalDestination" WHERE "id" = ev."aggregateId"`,
} satisfies Record<(typeof aggregateIdField)[keyof typeof aggregateIdField], Prisma.Sql>;

const modeOfEvent = Prisma.join(
  Object.entries(aggregateTable).map(([field, select]) => {
    const types = eventTypes.filter((t) => aggregateIdField[t] === field);
    return Prisma.sql`WHEN ev."eventType" = ANY(${types}::text[]) THEN (${select})`;
  }),
  ' ',
);

export type EnvironmentMode = 'SANDBOX' | 'PRODUCTION';

/** The environment type of a delivery's event (null: unknown). */
export async function deliveryEnvironmentType(db: Db, deliveryId: string): Promise<EnvironmentMode | null> {
  const [row] = await db.$queryRaw<{ mode: EnvironmentMode | null }[]>`
    SELECT CASE ${modeOfEvent} END AS "mode"
    FROM "WebhookDelivery" d JOIN "WebhookEvent" ev ON ev."id" = d."eventId"
    WHERE d."id" = ${deliveryId}::uuid`;
  return row?.mode ?? null;
}

/** The environment types of many deliveries' events in one statement (the GraphQL field's batch): deliveries without one are absent. */
export async function deliveryEnvironmentTypes(db: Db, deliveryIds: string[]): Promise<Map<string, EnvironmentMode | null>> {
  const rows = await db.$queryRaw<{ id: string; mode: EnvironmentMode | null }[]>`
    SELECT d."id"::text AS "id", CASE ${modeOfEvent} END AS "mode"
    FROM "WebhookDelivery" d JOIN "WebhookEvent" ev ON ev."id" = d."eventId"
    WHERE d."id" = ANY(${deliveryIds}::uuid[])`;
  return new Map(rows.map((r) => [r.id, r.mode]));
}
