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

/** Told of every notification on a channel, and of every moment notifications may have been missed (the connection lost or made). */
export interface ChannelWatcher {
  notified: () => void;
  /** The listener connected (LISTEN in place) or lost its connection: what was learnt before may be stale. */
  reset: () => void;
}

/**
 * The process's LISTEN connection: delivery status changes (below) and other channels watched by
 * the process (watch(): the API key cache's invalidations, src/auth/authenticate.ts).
 */
export class DeliveryStatusHub {
  private readonly pubsub = createPubSub<{ change: [DeliveryStatusChange] }>();
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private closed = false;
  private readonly watchers = new Map<string, Set<ChannelWatcher>>();
  /** Channels whose LISTEN is in place on the current connection. */
  private readonly listening = new Set<string>();

  /**
   * Watches `channel` (several watchers may watch one channel: each is told): connects if needed.
   * Until isListening(channel), a notification may be missed.
   */
  watch(channel: string, watcher: ChannelWatcher): void {
    if (this.closed) return;
    const known = this.watchers.get(channel);
    if (known) {
      known.add(watcher);
      return;
    }
    this.watchers.set(channel, new Set([watcher]));
    const client = this.client;
    if (client)
      void client
        .query(`LISTEN ${channel}`)
        .then(() => {
          if (this.client !== client) return;
          this.listening.add(channel);
          this.reset(channel);
        })
        .catch((err: unknown) => this.log.warn({ err, channel }, 'LISTEN failed'));
    else void this.listen().catch((err: unknown) => this.log.warn({ err }, 'listener connection failed'));
  }

  private reset(channel: string): void {
    for (const w of this.watchers.get(channel) ?? []) w.reset();
  }

  /** Whether every commit's notification on `channel` reaches this process from now on. */
  isListening(channel: string): boolean {
    return this.client !== null && this.listening.has(channel);
  }

  private lost(client: pg.Client): void {
    if (this.client !== client) return;
    this.client = null;
    this.listening.clear();
    for (const c of this.watchers.keys()) this.reset(c);
  }

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
      const watchers = this.watchers.get(msg.channel);
      if (watchers) {
        for (const w of watchers) w.notified();
        return;
      }
      if (msg.channel !== STATUS_CHANNEL || !msg.payload) return;
      try {
        this.pubsub.publish('change', JSON.parse(msg.payload) as DeliveryStatusChange);
      } catch (err) {
        this.log.warn({ err }, 'bad delivery status notification');
      }
    });
    client.on('end', () => this.lost(client));
    client.on('error', (err) => {
      this.log.warn({ err }, 'delivery status listener lost its connection; reconnecting');
      this.lost(client);
      client.end().catch(() => {});
      if (!this.closed) setTimeout(() => void this.listen().catch((e: unknown) => this.log.error({ err: e }, 'reconnect failed')), 1000).unref();
    });
    await client.connect();
    const channels = [...this.watchers.keys()];
    await client.query([STATUS_CHANNEL, ...channels].map((c) => `LISTEN ${c};`).join(' '));
    if (this.closed) {
      await client.end();
      return;
    }
    this.client = client;
    for (const c of channels) this.listening.add(c);
    for (const c of channels) this.reset(c);
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
    this.listening.clear();
    if (c) await c.end().catch(() => {});
  }
}
