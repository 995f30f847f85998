// npm run migrate:new NAME — writes prisma/migrations/<timestamp>_NAME/migration.sql with what the
// migrations do not do yet: every migration is applied to a shadow database (on the embedded
// PostgreSQL, or MIGRATION_DATABASE_URL's server: its role needs CREATEDB), then Prisma's engine
// diffs it to the datamodel (prisma/schema/*.prisma), and each canonical trigger/function file
// (prisma/sql/*.sql) whose definition differs is copied in whole. Review the SQL before committing
// (backfills, CHECK constraints and foreign keys the datamodel cannot say are written by hand).
import '../src/boot'; // first: an invalid setting is one line, not a stack
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
    console.log(dir ? `created ${dir}` : 'no change: prisma/schema and prisma/sql match the migrations; no migration created');
  }),
);
