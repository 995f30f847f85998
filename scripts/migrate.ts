// npm run migrate — applies pending migrations as the schema owner (MIGRATION_DATABASE_URL, or
// DATABASE_URL when its role owns the schema, or the embedded database's owner), installs the job
// runner's schema and grants the service role (DATABASE_URL's) its privileges.
import '../src/boot'; // first: an invalid setting is one line, not a stack
import { withDatabase } from '../src/db/database';
import { runScript } from './run-script';

await runScript('migrate', () =>
  withDatabase(
    async (_url, _db, { applied }) => {
      console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
    },
    { requireOwner: true },
  ),
);
