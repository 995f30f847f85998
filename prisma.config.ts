import { defineConfig } from 'prisma/config';

// Migrations are created and applied by src/db/migrate.ts with Prisma's WebAssembly schema
// engine (no binary download); this file serves `prisma generate` and `prisma migrate deploy`.
export default defineConfig({
  schema: 'prisma/schema',
  migrations: { path: 'prisma/migrations' },
  datasource: { url: process.env.DATABASE_URL ?? 'postgresql://localhost/unset' },
});
