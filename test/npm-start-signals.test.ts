import { describe, expect, test } from 'vitest';
import { cloneTemplateDatabase, serviceEnv, startService } from './process-harness';

/**
 * A supervisor that runs `npm start` (a container whose command it is, a process manager) signals
 * npm's process, not the service's. npm runs the script through `sh -c`, and npm hands SIGTERM to
 * its child: the start scripts `exec` node, so that child IS the service, which shuts down cleanly
 * (exit 0) instead of being left running, orphaned, by a shell that died of the signal.
 */
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.concurrent('npm start and its signals', () => {
  for (const script of ['start', 'start:api', 'start:worker'])
    test(`SIGTERM to npm's process (npm run ${script}) stops the service: it shuts down, exit 0, nothing left running`, async () => {
      const svc = await startService({
        databaseUrl: await cloneTemplateDatabase(`npm_${script.replace(':', '_')}`),
        env: await serviceEnv(),
        npmScript: script,
      });
      // The service is npm's descendant, not npm.
      expect(svc.nodePid).not.toBe(svc.child.pid);
      expect(alive(svc.nodePid)).toBe(true);
      // Signalled as soon as `listening` is read: the stop signals are the service's by then (src/start.ts).
      expect(await svc.stop(30_000)).toEqual({ code: 0, signal: null });
      expect(svc.logs().some((l) => l.msg === 'shutting down' && l.signal === 'SIGTERM')).toBe(true);
      expect(svc.logs().some((l) => l.msg === 'stopped' && l.code === 0)).toBe(true);
      expect(alive(svc.nodePid)).toBe(false);
    }, 180_000);
});
