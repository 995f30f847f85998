import { readFileSync } from 'node:fs';
import { TOKEN_ARTIFACT, type TokenArtifact } from '../scripts/evm-token-compile';

/** The committed artifact of the test ERC-20 (scripts/evm-token-compile.ts says how it is made; `npm run evm:token` rewrites it). */
export { compileTestToken, TOKEN_ARTIFACT, TOKEN_SOURCE, type TokenArtifact } from '../scripts/evm-token-compile';

export function loadTestToken(): TokenArtifact {
  return JSON.parse(readFileSync(TOKEN_ARTIFACT, 'utf8')) as TokenArtifact;
}
