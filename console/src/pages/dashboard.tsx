// The platform dashboard (platformDashboard, globalRevenueAccount): volumes, balances per
// asset-network, open divergences, reserve levels, as tables and small charts of counts.
import { useEffect, useState } from 'preact/hooks';
import { explain, request, type Session } from '../api';
import { DashboardQuery } from '../operations';
import type { ConsoleDashboardQuery } from '../generated/graphql';
import { BarChart } from '../chart';
import { age, when } from '../format';

type StatusCounts = { status: string; count: number }[];

function Counts({ title, rows }: { title: string; rows: StatusCounts }) {
  return (
    <div class="card">
      <BarChart
        title={title}
        labels={rows.map((r) => r.status)}
        series={[{ label: 'Count', values: rows.map((r) => r.count), color: '#1f5fbf' }]}
        height={190}
      />
      <table class="data compact" aria-label={title}>
        <tbody>
          {rows.map((r) => (
            <tr>
              <th scope="row">{r.status}</th>
              <td class="num">{r.count}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function DashboardPage({ session }: { session: Session }) {
  const [data, setData] = useState<ConsoleDashboardQuery | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    request(session, DashboardQuery, {}).then(setData, (e) => setError(explain(e)));
  }, [session]);
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!data) return <p role="status">Loading…</p>;
  const d = data.platformDashboard;
  return (
    <>
      <p class="muted">Generated {when(d.generatedAt)}. Amounts in base units (decimal strings).</p>
      <dl class="facts">
        <dt>Organizations</dt>
        <dd>{d.organizations}</dd>
        <dt>Applications</dt>
        <dd>{d.applications}</dd>
        <dt>Accounts</dt>
        <dd>{d.ledger.accounts}</dd>
        <dt>Ledger transactions</dt>
        <dd>{d.ledger.transactions}</dd>
        <dt>Webhook dead letters</dt>
        <dd>{d.webhooks.deadLetterCount}</dd>
        <dt>Failed attempts (last hour)</dt>
        <dd>{d.webhooks.failedAttemptsLastHour}</dd>
        <dt>Oldest pending delivery</dt>
        <dd>{d.webhooks.oldestPendingDeliveryAgeSeconds == null ? 'none' : age(d.webhooks.oldestPendingDeliveryAgeSeconds)}</dd>
      </dl>
      <div class="cards">
        <Counts title="Transactions by status" rows={d.transactions} />
        <Counts title="Settlements by status" rows={d.settlements} />
        <Counts title="Refunds by status" rows={d.refunds} />
        <Counts title="Deposits by status" rows={d.deposits} />
        <Counts title="Webhook deliveries by status" rows={d.webhooks.deliveries} />
      </div>
      <h2>Volumes per asset-network</h2>
      {d.volumes.length === 0 && <p>No transaction yet.</p>}
      <table class="data" aria-label="Volumes per asset-network" hidden={d.volumes.length === 0}>
        <thead>
          <tr>
            <th scope="col">Asset-network</th>
            <th scope="col">Funded</th>
            <th scope="col">Settled</th>
            <th scope="col">Refunded</th>
          </tr>
        </thead>
        <tbody>
          {d.volumes.map((v) => (
            <tr>
              <td>{v.assetNetworkId}</td>
              <td class="num">{v.funded}</td>
              <td class="num">{v.settled}</td>
              <td class="num">{v.refunded}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Platform revenue balances per asset-network</h2>
      <table class="data" aria-label="Platform revenue balances">
        <thead>
          <tr>
            <th scope="col">Asset-network</th>
            <th scope="col">Balance</th>
          </tr>
        </thead>
        <tbody>
          {data.globalRevenueAccount.map((b) => (
            <tr>
              <td>{b.assetNetworkId}</td>
              <td class="num">{b.balance}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Open divergences</h2>
      {d.openDivergences.length === 0 ? (
        <p>None in the latest reconciliation.</p>
      ) : (
        <table class="data" aria-label="Open divergences">
          <thead>
            <tr>
              <th scope="col">Divergence</th>
              <th scope="col">Asset-network</th>
              <th scope="col">Kind</th>
              <th scope="col">Difference</th>
              <th scope="col">Reconciliation</th>
            </tr>
          </thead>
          <tbody>
            {d.openDivergences.map((v) => (
              <tr>
                <td>{v.id}</td>
                <td>{v.assetNetworkId}</td>
                <td>{v.kind}</td>
                <td class="num">{v.difference}</td>
                <td>{v.reconciliationId}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Network resource reserves</h2>
      {d.reserveLevels.length === 0 && <p>No network has a reserve.</p>}
      <table class="data" aria-label="Reserve levels" hidden={d.reserveLevels.length === 0}>
        <thead>
          <tr>
            <th scope="col">Network</th>
            <th scope="col">Balance</th>
            <th scope="col">Low threshold</th>
            <th scope="col">Target</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {d.reserveLevels.map((r) => (
            <tr>
              <td>{r.networkName}</td>
              <td class="num">{r.balance}</td>
              <td class="num">{r.lowThreshold ?? '—'}</td>
              <td class="num">{r.targetBalance ?? '—'}</td>
              <td>{!r.configured ? 'not configured' : r.belowThreshold ? <strong class="bad">below threshold</strong> : 'ok'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
