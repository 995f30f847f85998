/**
 * npm start's entry point (and `npm run start:prod`'s, built): first the heap budget, which may
 * restart this process with `--max-old-space-size` in place (src/heap-budget.ts), then the service
 * (src/start.ts), loaded only then so a restart costs Node's start, not the service's modules.
 */
import { applyHeapBudget } from './heap-budget';

applyHeapBudget();
await import('./start');
