import { setTimeout as sleep } from 'node:timers/promises';
import { builder } from '../builder';
import { policies } from '../auth/policy';

builder.queryField('health', (t) =>
  t.string({
    description: 'Always "ok": a liveness probe through the GraphQL pipeline.',
    authScopes: { policy: policies.public },
    resolve: () => 'ok',
  }),
);

const Heartbeat = builder.objectRef<{ sequence: number; at: Date }>('Heartbeat').implement({
  fields: (t) => ({
    sequence: t.exposeInt('sequence'),
    at: t.expose('at', { type: 'DateTime' }),
  }),
});

builder.subscriptionField('heartbeat', (t) =>
  t.field({
    type: Heartbeat,
    description: 'Ticks every intervalMs (100 to 60000) up to count times: checks a subscription transport end to end.',
    authScopes: { policy: policies.catalogRead },
    args: {
      intervalMs: t.arg.int({ defaultValue: 1000 }),
      count: t.arg.int({ defaultValue: 10 }),
    },
    subscribe: async function* (_root, args, ctx) {
      const interval = Math.min(Math.max(args.intervalMs ?? 1000, 100), 60_000);
      const count = Math.min(Math.max(args.count ?? 10, 1), 1000);
      for (let sequence = 1; sequence <= count; sequence++) {
        await sleep(interval);
        yield { sequence, at: ctx.deps.clock.now() };
      }
    },
    resolve: (event) => event,
  }),
);
