import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { projectRoot } from '../src/root';

/**
 * The ERC-20 of the EVM test suite (test/fixtures/evm/TestToken.sol, OpenZeppelin's ERC20),
 * compiled with solc (the npm package: soljson, no download). The artifact (ABI + bytecode) is
 * committed as test/fixtures/evm/TestToken.json by `npm run evm:token`; test/evm-token.test.ts
 * checks that compiling again gives the same bytecode.
 */
export const TOKEN_SOURCE = path.join(projectRoot, 'test/fixtures/evm/TestToken.sol');
export const TOKEN_ARTIFACT = path.join(projectRoot, 'test/fixtures/evm/TestToken.json');

export interface TokenArtifact {
  contractName: string;
  compiler: string;
  abi: unknown[];
  bytecode: `0x${string}`;
}

export function compileTestToken(): TokenArtifact {
  const require = createRequire(import.meta.url);
  const solc = require('solc') as { compile(input: string, opts: { import(p: string): { contents: string } | { error: string } }): string; version(): string };
  const input = {
    language: 'Solidity',
    sources: { 'TestToken.sol': { content: readFileSync(TOKEN_SOURCE, 'utf8') } },
    settings: { evmVersion: 'paris', optimizer: { enabled: true, runs: 200 }, outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } } },
  };
  const findImport = (p: string) => {
    try {
      return { contents: readFileSync(require.resolve(p), 'utf8') };
    } catch {
      return { error: `not found: ${p}` };
    }
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: unknown[]; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (out.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const c = out.contracts['TestToken.sol']!.TestToken!;
  return { contractName: 'TestToken', compiler: solc.version(), abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
}
