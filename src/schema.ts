import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from './builder';
import './tenancy/schema';
import './accounts/schema';
import './webhooks/schema';
import './ledger/schema';
import './catalog/schema';
import './custody/schema';
import './chains/schema';
import './transactions/schema';
import './deposits/schema';
import './settlements/release-schema';
import './refunds/schema';
import './withdrawals/schema';
import './withdrawals/withdrawals-schema';
import './ledger/corrections-schema';
import './settlements/schema';
import './system/schema';
import './admin/schema';
import './operations/schema';
import './treasury/reconciliation-schema';
import './treasury/treasury-schema';
import './treasury/costs-schema';

export const schema = builder.toSchema();

/** schema.graphql as checked in: printed from the code, sorted. */
export const printedSchema = () => printSchema(lexicographicSortSchema(schema)) + '\n';
