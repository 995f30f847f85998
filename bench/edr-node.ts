// Hardhat's EDR node served over JSON-RPC on HTTP, as its own process (bench/edr.ts starts it):
// Hardhat 3's in-process `edr-simulated` network (packages hardhat, @nomicfoundation/edr and its
// native binary @nomicfoundation/edr-linux-x64-gnu), bridged to a node:http server on 127.0.0.1 so
// the service's EVM adapter talks to it over the transport production uses, a URL. Single and batch
// JSON-RPC requests. Chain id EDR_CHAIN_ID (31337); the funded accounts of Hardhat's default
// mnemonic ("test test … junk", the same keys as anvil's); mining as Hardhat's default (automine),
// changed with evm_setAutomine / evm_mine / hardhat_mine. Prints `listening <url>` on stdout.
import { createServer } from 'node:http';
import { createHardhatRuntimeEnvironment } from 'hardhat/hre';

const chainId = Number(process.env.EDR_CHAIN_ID ?? 31337);
const hre = await createHardhatRuntimeEnvironment({
  networks: { default: { type: 'edr-simulated', chainType: 'l1', chainId, allowUnlimitedContractSize: false } },
});
const { provider } = await hre.network.connect();

interface RpcRequest {
  id?: unknown;
  jsonrpc?: string;
  method: string;
  params?: unknown[];
}
async function answer(req: RpcRequest) {
  try {
    const result = await provider.request({ method: req.method, params: req.params ?? [] });
    return { jsonrpc: '2.0', id: req.id ?? null, result: result ?? null };
  } catch (e) {
    const err = e as { code?: number; message?: string; data?: unknown };
    return {
      jsonrpc: '2.0',
      id: req.id ?? null,
      error: { code: typeof err.code === 'number' ? err.code : -32603, message: err.message ?? String(e), data: err.data },
    };
  }
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    void (async () => {
      let body: RpcRequest | RpcRequest[];
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RpcRequest | RpcRequest[];
      } catch {
        res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'parse error' } }));
        return;
      }
      // A batch's requests are answered in order (EDR handles one request at a time anyway).
      const out = Array.isArray(body)
        ? await (async () => {
            const r = [];
            for (const x of body) r.push(await answer(x));
            return r;
          })()
        : await answer(body);
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify(out, (_k, v: unknown) => (typeof v === 'bigint' ? `0x${v.toString(16)}` : v)));
    })();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.EDR_PORT ?? 0), '127.0.0.1', () => {
  const a = server.address() as { port: number };
  process.stdout.write(`listening http://127.0.0.1:${a.port}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
