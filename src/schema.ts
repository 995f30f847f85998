import { lexicographicSortSchema, printSchema } from 'graphql';
import { builder } from './builder';
import './tenancy/tenancy.graphql';
import './accounts/accounts.graphql';
import './webhooks/webhooks.graphql';
import './ledger/ledger.graphql';
import './catalog/catalog.graphql';
import './custody/custody.graphql';
import './chains/chains.graphql';
import './transactions/transactions.graphql';
import './deposits/deposits.graphql';
import './release/release-rules.graphql';
import './refunds/refunds.graphql';
import './withdrawals/destinations.graphql';
import './withdrawals/withdrawals.graphql';
import './ledger/corrections.graphql';
import './settlements/settlements.graphql';
import './system/system.graphql';
import './admin/admin.graphql';
import './operations/recovery.graphql';
import './treasury/reconciliation/reconciliation.graphql';
import './treasury/treasury.graphql';
import './treasury/costs/costs.graphql';

export const schema = builder.toSchema();

/** schema.graphql as checked in: printed from the code, sorted. */
export const printedSchema = () => printSchema(lexicographicSortSchema(schema)) + '\n';
