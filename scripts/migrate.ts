// npm run migrate — applies pending migrations to DATABASE_URL (or the embedded database).
import { withDatabase } from '../src/db/database';
import { applyMigrations } from '../src/db/migrate';

await withDatabase(async (url) => {
  const applied = await applyMigrations(url);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
});
