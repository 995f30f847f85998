import { config } from '../config';
import { startEmbeddedPostgres } from './embedded';

export interface Database {
  url: string;
  /** Stops the embedded server when this process started one. */
  close(): Promise<void>;
}

/** DATABASE_URL when set; otherwise the embedded PostgreSQL under DATA_DIR, started on demand. */
export async function openDatabase(): Promise<Database> {
  if (config.DATABASE_URL) return { url: config.DATABASE_URL, close: async () => {} };
  const db = await startEmbeddedPostgres({ dataDir: config.DATA_DIR, port: config.EMBEDDED_PG_PORT, database: 'ftis' });
  return { url: db.url, close: () => db.stop() };
}

export async function withDatabase<T>(fn: (url: string) => Promise<T>): Promise<T> {
  const db = await openDatabase();
  try {
    return await fn(db.url);
  } finally {
    await db.close();
  }
}
