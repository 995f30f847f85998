import { builder } from '../builder';
import { policies } from '../auth/policy';
import { fieldError } from '../errors';
import { stuckOperations, type StuckOperation } from './recovery';

/** GetStuckOperations (docs/admin.md, docs/deployment.md): platform operators only. */
const StuckOperationRef = builder.objectRef<StuckOperation>('StuckOperation').implement({
  description:
    'A settlement, refund, withdrawal or deposit that has not moved for longer than expected (non-terminal, ' +
    'unchanged since `since`), or a deposit address whose chain sync keeps failing (CHAIN_SYNC: retried alone ' +
    'since `since`) (docs/deployment.md, "Stuck operations").',
  fields: (t) => ({
    kind: t.exposeString('kind', { description: 'SETTLEMENT, REFUND, WITHDRAWAL, DEPOSIT or CHAIN_SYNC (a deposit address failing its sync).' }),
    id: t.exposeID('id', { description: 'The operation; for CHAIN_SYNC, the deposit address.' }),
    organizationId: t.exposeID('organizationId'),
    status: t.exposeString('status', {
      description: 'The operation status (PENDING; APPROVED, BROADCAST, BROADCAST_FAILED; DETECTED, CONFIRMING; FAILING for CHAIN_SYNC).',
    }),
    since: t.field({
      type: 'DateTime',
      description: 'Its last change (updatedAt); for CHAIN_SYNC, when its retry job was created (the failure that isolated it).',
      resolve: (s) => s.since,
    }),
    ageSeconds: t.exposeInt('ageSeconds', { description: 'Seconds since its last change.' }),
    jobState: t.exposeString('jobState', {
      nullable: true,
      description:
        'The state of its newest job (created, retry, active, completed, failed, cancelled); null when none is kept (a ' +
        "deposit's job is its network's chain.sync; a CHAIN_SYNC entry's, its address's chain.sync.address).",
    }),
    lastError: t.exposeString('lastError', {
      nullable: true,
      description: "The newest failure known: the job's error, else the operation's own (a withdrawal's lastBroadcastError).",
    }),
    networkId: t.exposeID('networkId', { nullable: true, description: 'DEPOSIT and CHAIN_SYNC: the network; null for the other kinds.' }),
    address: t.exposeString('address', { nullable: true, description: 'DEPOSIT and CHAIN_SYNC: the deposit address on the chain; null for the other kinds.' }),
  }),
});

export const STUCK_LIMIT_DEFAULT = 100;
export const STUCK_LIMIT_MAX = 500;

builder.queryFields((t) => ({
  stuckOperations: t.field({
    type: [StuckOperationRef],
    description:
      'GetStuckOperations: operations idle for longer than olderThanSeconds (default: the STUCK_AFTER_SECONDS setting), oldest first. Platform operators only.',
    authScopes: { policy: policies.operator },
    args: {
      olderThanSeconds: t.arg.int({ description: 'Idle for longer than this (0 to 2592000); default STUCK_AFTER_SECONDS (300).' }),
      limit: t.arg.int({ description: `At most this many: 1 to ${STUCK_LIMIT_MAX}; default ${STUCK_LIMIT_DEFAULT}.` }),
    },
    resolve: (_p, a, ctx) => {
      const olderThanSeconds = a.olderThanSeconds ?? ctx.deps.config.STUCK_AFTER_SECONDS;
      if (olderThanSeconds < 0 || olderThanSeconds > 30 * 86_400) throw fieldError('olderThanSeconds', 'must be an integer from 0 to 2592000');
      const limit = a.limit ?? STUCK_LIMIT_DEFAULT;
      if (limit < 1 || limit > STUCK_LIMIT_MAX) throw fieldError('limit', `must be an integer from 1 to ${STUCK_LIMIT_MAX}`);
      return stuckOperations(ctx.deps.db, ctx.deps.clock.now(), { olderThanSeconds, limit });
    },
  }),
}));
