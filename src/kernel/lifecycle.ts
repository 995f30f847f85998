/**
 * The process's shutdown state (issue 20; docs/deployment.md "Graceful shutdown"). The shutdown
 * (src/shutdown.ts) marks it first, before any listener closes: from then on `/readyz` answers 503
 * `{"status":"stopping"}` on the API and on the worker so a load balancer takes the process out of
 * rotation, `/healthz` stays 200 (the process is alive and finishing its work), and answers carry
 * `Connection: close` so keep-alive clients reconnect elsewhere. One per process: a signal stops
 * the whole process.
 */
export const lifecycle = { stopping: false };

/** Whether the process is shutting down. */
export const stopping = (): boolean => lifecycle.stopping;
