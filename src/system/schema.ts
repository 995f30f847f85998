import { builder } from '../builder';
import { policies } from '../auth/policy';

builder.queryField('health', (t) =>
  t.string({
    description: 'Always "ok": a liveness probe through the GraphQL pipeline.',
    authScopes: { policy: policies.public },
    resolve: () => 'ok',
  }),
);
