/**
 * The dependency rules of the repository (docs/architecture.md "Layers"), checked by `npm run lint:deps`.
 *
 * LAYERS is the declared order: a module may import modules of its own layer and of the layers
 * before it, never of a later one. One folder of `src/` is one domain; the root-level modules of
 * `src/` that every domain uses form the kernel with `src/kernel/`. Type-only imports are not
 * checked by the order for the kernel and audit only (they erase at compile time: `Context` names the
 * types of what it carries); domains are held to the order for type imports too.
 */
const LAYERS = [
  ['kernel', '^src/kernel/', '^src/db/', '^src/(errors|money|clock|ids|config|mailer|root|context|idempotency)\\.ts$'],
  ['audit', '^src/audit/'],
  ['auth', '^src/auth/'],
  ['graphql', '^src/(builder|input|graphql-limits)\\.ts$'],
  ['tenancy', '^src/tenancy/'],
  ['webhooks', '^src/webhooks/'],
  ['catalog', '^src/catalog/'],
  ['chains', '^src/chains/'],
  ['custody', '^src/custody/'],
  ['ledger', '^src/ledger/'],
  ['accounts', '^src/accounts/'],
  ['treasury', '^src/treasury/'],
  ['withdrawals', '^src/withdrawals/'],
  ['release', '^src/release/'],
  ['deposits', '^src/deposits/'],
  ['transactions', '^src/transactions/'],
  ['settlements', '^src/settlements/'],
  ['refunds', '^src/refunds/'],
  ['operations', '^src/operations/'],
  ['admin', '^src/admin/'],
  ['system', '^src/system/', '^src/pages/'],
];

/** The composition root: the one `src/` module that imports `rest/` and `jobs/`. */
const COMPOSITION_ROOT = '^src/compose\\.ts$';
/** The process around it: what no domain may import. */
const PROCESS = '^src/(main|start|heap-budget|app|server|shutdown|schema|compose)\\.ts$';

/** Layers whose type-only imports of later layers are allowed (they erase at compile time). */
const TYPE_EXEMPT = ['kernel', 'audit'];

const layerRules = LAYERS.slice(0, -1).map(([name, ...from], i) => ({
  name: `layer-${name}`,
  comment: `${name} may import only ${LAYERS.slice(0, i + 1)
    .map(([n]) => n)
    .join(', ')} (the declared order in .dependency-cruiser.cjs)`,
  severity: 'error',
  from: { path: from, pathNot: '\\.test\\.ts$' },
  to: {
    path: LAYERS.slice(i + 1).flatMap(([, ...paths]) => paths),
    // Only the kernel's Context and the audit entry's actor name types of later layers; every domain
    // is held to the order for type imports too, so no cycle between domains exists even in types.
    ...(TYPE_EXEMPT.includes(name) ? { dependencyTypesNot: ['type-only'] } : {}),
  },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycles between modules (type-only imports excluded).',
      severity: 'error',
      from: { path: '^(src|rest|jobs|scripts|bench)/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'production-not-test',
      comment: 'Production code (src, rest, jobs, scripts except *.test.ts) never imports test/ (bench/ may: it measures).',
      severity: 'error',
      from: { path: '^(src|rest|jobs|scripts)/', pathNot: '\\.test\\.ts$' },
      to: { path: '^test/' },
    },
    {
      name: 'src-not-rest-or-jobs',
      comment: 'src/ reaches rest/ and jobs/ only through the composition root.',
      severity: 'error',
      from: { path: '^src/', pathNot: [COMPOSITION_ROOT, '\\.test\\.ts$'] },
      to: { path: '^(rest|jobs)/' },
    },
    {
      name: 'domains-not-composition-root',
      comment: 'Domains never import the process modules (the composition root, the app, the server, the schema).',
      severity: 'error',
      from: { path: '^src/[^/]+/', pathNot: '\\.test\\.ts$' },
      to: { path: PROCESS },
    },
    ...layerRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/generated/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
