// npm run migrate:new NAME — writes prisma/migrations/<timestamp>_NAME/ with the SQL that takes the
// newest migration's schema snapshot to the current prisma/schema.prisma. Edit the SQL (triggers,
// functions) before committing if the change needs more than the datamodel can say.
import { createMigration } from '../src/db/migrate';
import { withDatabase } from '../src/db/database';
import { runScript } from './run-script';

const name = process.argv[2];
if (!name) {
  console.error('usage: npm run migrate:new NAME');
  process.exit(2);
}
await runScript('migrate:new', () =>
  withDatabase(async (url, db) => {
    const dir = await createMigration(db.ownerUrl ?? url, name);
    console.log(dir ? `created ${dir}` : 'schema.prisma has no change: no migration created');
  }),
);
