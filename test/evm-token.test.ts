import { expect, test } from 'vitest';
import { compileTestToken, loadTestToken } from './evm-token';

// The committed artifact the EVM suite deploys is what solc makes of the committed source (npm run evm:token writes it).
test('compiling test/fixtures/evm/TestToken.sol (OpenZeppelin ERC20) with solc gives the committed ABI and bytecode', () => {
  const fresh = compileTestToken();
  const committed = loadTestToken();
  expect(fresh.compiler).toBe(committed.compiler);
  expect(fresh.bytecode).toBe(committed.bytecode);
  expect(fresh.abi).toEqual(committed.abi);
}, 60_000);
