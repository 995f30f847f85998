/**
 * Imported first by every entry point (src/main.ts, the scripts): settings are read when
 * src/config.ts loads, before any entry point's own code runs, so an invalid setting would end the
 * process with Node's uncaught-exception dump. This turns that one failure into one line naming the
 * variable (never its value) and exit code 1; every other error keeps Node's default. Entry points
 * call `booted()` once their imports are loaded.
 */
const onConfigError = (err: unknown) => {
  if (err instanceof Error && err.name === 'ConfigError') {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  throw err;
};
process.once('uncaughtException', onConfigError);

export function booted(): void {
  process.off('uncaughtException', onConfigError);
}
