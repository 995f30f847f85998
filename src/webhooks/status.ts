import pg from 'pg';
import type { Logger } from 'pino';
import { createPubSub, filter, pipe } from 'graphql-yoga';
import type { Db } from '../db/prisma';

/**
 * Live delivery status across processes. Whoever changes a delivery (a job worker, an API
 * process redelivering or deactivating) calls `notifyStatus` in the same transaction: PostgreSQL
 * delivers the NOTIFY to every listener at commit, and never for a rollback. Each API process
 * keeps one LISTEN connection (`DeliveryStatusHub`) and fans the changes out to its graphql-ws
 * subscribers.
 */
export const STATUS_CHANNEL = 'webhook_delivery_status';

export type DeliveryStatusKind = 'ATTEMPTED' | 'DELIVERED' | 'RETRY_SCHEDULED' | 'DEAD_LETTERED' | 'REDELIVERED' | 'CANCELLED';

export interface DeliveryStatusChange {
  kind: DeliveryStatusKind;
  deliveryId: string;
  endpointId: string;
  organizationId: string;
  eventType: string;
  status: string;
  attemptCount: number;
  outcome: string | null;
  statusCode: number | null;
  nextAttemptAt: string | null;
  originalDeliveryId: string | null;
  at: string;
}

/** Queues the changes' notifications in `tx`; they go out when it commits. */
export async function notifyStatus(tx: Db, changes: DeliveryStatusChange[]): Promise<void> {
  if (!changes.length) return;
  const payloads = changes.map((c) => JSON.stringify(c));
  await tx.$executeRaw`SELECT pg_notify(${STATUS_CHANNEL}, p) FROM unnest(${payloads}::text[]) AS p`;
}

export interface StatusFilter {
  endpointId?: string;
  organizationId?: string;
}

export class DeliveryStatusHub {
  private readonly pubsub = createPubSub<{ change: [DeliveryStatusChange] }>();
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  /** Starts listening (once); resolves when LISTEN is in place, so no later commit is missed. */
  listen(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => (this.connecting = null));
    return this.connecting;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on('notification', (msg) => {
      if (msg.channel !== STATUS_CHANNEL || !msg.payload) return;
      try {
        this.pubsub.publish('change', JSON.parse(msg.payload) as DeliveryStatusChange);
      } catch (err) {
        this.log.warn({ err }, 'bad delivery status notification');
      }
    });
    client.on('error', (err) => {
      this.log.warn({ err }, 'delivery status listener lost its connection; reconnecting');
      this.client = null;
      client.end().catch(() => {});
      if (!this.closed) setTimeout(() => void this.listen().catch((e: unknown) => this.log.error({ err: e }, 'reconnect failed')), 1000).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${STATUS_CHANNEL}`);
    if (this.closed) {
      await client.end();
      return;
    }
    this.client = client;
  }

  /** The changes matching `f` from now on (an empty filter: every change, for operators). */
  async subscribe(f: StatusFilter): Promise<AsyncIterable<DeliveryStatusChange>> {
    await this.listen();
    return pipe(
      this.pubsub.subscribe('change'),
      filter((c: DeliveryStatusChange) => (!f.endpointId || c.endpointId === f.endpointId) && (!f.organizationId || c.organizationId === f.organizationId)),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    const c = this.client;
    this.client = null;
    if (c) await c.end().catch(() => {});
  }
}
