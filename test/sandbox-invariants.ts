import { payerAddress } from '../src/chains/sandbox/chain';
import type { QueryableDb } from './ledger-invariants';

/** Each address's received minus sent over MINED transactions (`nets`: networkId, assetNetworkId, addr, net). */
const NETS = `WITH flows AS (
       SELECT "networkId", "assetNetworkId", "toAddress" AS addr, "amount" AS delta FROM "SandboxTransaction" WHERE "status" = 'MINED'
       UNION ALL
       SELECT "networkId", "assetNetworkId", "fromAddress", -"amount" FROM "SandboxTransaction" WHERE "status" = 'MINED'
     ), nets AS (
       SELECT "networkId", "assetNetworkId", addr, SUM(delta) AS net FROM flows GROUP BY 1, 2, 3
     )`;

/**
 * The sandbox chain's money invariants, checked against the database (docs/chains.md). Call it after
 * tests that drive the sandbox chain (e.g. in afterEach): it throws with every violation it finds.
 * Faucets are the organizations' payer addresses (`payerAddress`), the only sources of value.
 *
 * 1. Per address (faucets aside): received minus sent over MINED transactions is never negative
 *    (nobody spent more than they held), and its balance row says exactly that.
 * 2. Per (network, asset-network): the sum of the address balances equals what entered the chain
 *    (MINED faucet transfers) less what went back to a faucet.
 */
export async function checkSandboxInvariants(db: QueryableDb): Promise<void> {
  const orgs = await db.$queryRawUnsafe<{ org: string }[]>(
    `SELECT DISTINCT "senderOrganizationId"::text AS org FROM "SandboxTransaction" WHERE "senderOrganizationId" IS NOT NULL`,
  );
  const faucets = orgs.map((o) => payerAddress(o.org));
  const violations: string[] = [];

  const nets = await db.$queryRawUnsafe<{ n: string; a: string; addr: string; net: string; balance: string | null }[]>(
    `${NETS}
     SELECT COALESCE(n."networkId", b."networkId")::text AS n, COALESCE(n."assetNetworkId", b."assetNetworkId")::text AS a,
            COALESCE(n.addr, b."address") AS addr, COALESCE(n.net, 0)::text AS net, b."balance"::text AS balance
       FROM nets n FULL JOIN "SandboxAddressBalance" b
         ON b."networkId" = n."networkId" AND b."assetNetworkId" = n."assetNetworkId" AND b."address" = n.addr
      WHERE NOT (COALESCE(n.addr, b."address") = ANY($1::text[]))`,
    faucets,
  );
  const sums = new Map<string, bigint>();
  for (const r of nets) {
    const net = BigInt(r.net);
    const balance = BigInt(r.balance ?? '0');
    if (net < 0n) violations.push(`${r.addr} on ${r.n}/${r.a} spent ${-net} more than it received`);
    if (balance !== net) violations.push(`${r.addr} on ${r.n}/${r.a}: balance row ${balance}, mined transactions ${net}`);
    sums.set(`${r.n}/${r.a}`, (sums.get(`${r.n}/${r.a}`) ?? 0n) + balance);
  }

  // 3. Every balance row (faucets included) holds its address's whole net and its positive part: the
  //    per-block moves add up to what the mined transactions say (issue 22: no recompute of history).
  const moved = await db.$queryRawUnsafe<{ addr: string; net: string; rowNet: string | null; balance: string | null }[]>(
    `${NETS}
     SELECT COALESCE(n.addr, b."address") AS addr, COALESCE(n.net, 0)::text AS net, b."net"::text AS "rowNet", b."balance"::text AS balance
       FROM nets n FULL JOIN "SandboxAddressBalance" b
         ON b."networkId" = n."networkId" AND b."assetNetworkId" = n."assetNetworkId" AND b."address" = n.addr
      WHERE COALESCE(b."net", 0) <> COALESCE(n.net, 0) OR COALESCE(b."balance", 0) <> GREATEST(0, COALESCE(n.net, 0))`,
  );
  for (const r of moved) violations.push(`${r.addr}: balance row net ${r.rowNet} / balance ${r.balance}, mined transactions net ${r.net}`);

  const entered = await db.$queryRawUnsafe<{ k: string; amount: string }[]>(
    `SELECT "networkId"::text || '/' || "assetNetworkId"::text AS k,
            (SUM(CASE WHEN "fromAddress" = ANY($1::text[]) THEN "amount" ELSE 0 END)
             - SUM(CASE WHEN "toAddress" = ANY($1::text[]) AND NOT ("fromAddress" = ANY($1::text[])) THEN "amount" ELSE 0 END))::text AS amount
       FROM "SandboxTransaction" WHERE "status" = 'MINED' GROUP BY 1`,
    faucets,
  );
  const keys = new Set([...sums.keys(), ...entered.map((e) => e.k)]);
  for (const k of keys) {
    const inflow = BigInt(entered.find((e) => e.k === k)?.amount ?? '0');
    const held = sums.get(k) ?? 0n;
    if (held !== inflow) violations.push(`${k}: addresses hold ${held}, faucets put in ${inflow}`);
  }
  if (violations.length) throw new Error(`sandbox chain invariants violated:\n${violations.join('\n')}`);
}
