/** console/build.mjs: builds the operator console into src/generated/console-assets.ts; answers that path. */
export declare function buildConsole(): Promise<string>;
export declare const consoleAssetsFile: string;
