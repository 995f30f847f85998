// npm run evm:token — compiles test/fixtures/evm/TestToken.sol (OpenZeppelin ERC20) with solc and
// writes its ABI and bytecode to test/fixtures/evm/TestToken.json, which the EVM test suite deploys.
import { writeFileSync } from 'node:fs';
import { compileTestToken, TOKEN_ARTIFACT } from './evm-token-compile';

const artifact = compileTestToken();
writeFileSync(TOKEN_ARTIFACT, JSON.stringify(artifact, null, 1) + '\n');
console.log(`wrote ${TOKEN_ARTIFACT} (${artifact.compiler}, ${(artifact.bytecode.length - 2) / 2} bytes of bytecode)`);
