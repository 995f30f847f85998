import { booted } from '../src/boot';
/**
 * Runs a script's body: a failure prints one line naming its cause (`<script>: <message>`) on
 * stderr and exits 1, instead of Node's uncaught-exception dump (which printed `undefined` for the
 * embedded database's failures). The stack follows only with DEBUG set.
 */
export async function runScript(name: string, body: () => Promise<void>): Promise<void> {
  booted();
  try {
    await body();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`${name}: ${message}\n`);
    if (process.env.DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
    process.exit(1);
  }
}
