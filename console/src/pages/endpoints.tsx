// Endpoint health: per endpoint its success rate, last error, backlog and next retry (WebhookEndpoint.health
// and its recent deliveries' attempts), with a chart of attempt outcomes per hour over the last hours.
import { useEffect, useState } from 'preact/hooks';
import { explain, type Session } from '../api';
import { BarChart } from '../chart';
import { excerpt, when } from '../format';
import { allDeliveries } from './dead-letters';
import { useEndpoints } from './endpoint-picker';

const HOURS = 12;
interface Stats {
  success: number;
  failed: number;
  perHour: { success: number[]; failed: number[] };
}

export function EndpointsPage({ session }: { session: Session }) {
  const { endpoints, error } = useEndpoints(session);
  const [stats, setStats] = useState<Record<string, Stats>>({});
  const [statsError, setStatsError] = useState('');
  const [hourStart] = useState(() => Math.floor(Date.now() / 3600_000) - HOURS + 1);
  useEffect(() => {
    if (!endpoints) return;
    Promise.all(
      endpoints.map(async (e) => {
        const s: Stats = { success: 0, failed: 0, perHour: { success: Array(HOURS).fill(0), failed: Array(HOURS).fill(0) } };
        for (const d of await allDeliveries(session, e.id))
          for (const a of d.attempts) {
            const ok = a.outcome === 'SUCCESS';
            const h = Math.floor(Date.parse(a.attemptedAt) / 3600_000) - hourStart;
            if (h < 0 || h >= HOURS) continue;
            if (ok) s.success++;
            else s.failed++;
            s.perHour[ok ? 'success' : 'failed'][h]! += 1;
          }
        return [e.id, s] as const;
      }),
    ).then(
      (all) => setStats(Object.fromEntries(all)),
      (e) => setStatsError(explain(e)),
    );
  }, [endpoints]);
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!endpoints) return <p role="status">Loading endpoints…</p>;
  if (!endpoints.length) return <p>The organization has no webhook endpoint.</p>;
  const labels = Array.from({ length: HOURS }, (_, i) => `${String(new Date((hourStart + i) * 3600_000).getHours()).padStart(2, '0')}h`);
  const sum = (k: 'success' | 'failed') => labels.map((_, i) => Object.values(stats).reduce((a, s) => a + s.perHour[k][i]!, 0));
  return (
    <>
      {statsError && (
        <p class="error" role="alert">
          {statsError}
        </p>
      )}
      <table class="data" aria-label={`Endpoints, attempts of the last ${HOURS} hours`}>
        <thead>
          <tr>
            <th scope="col">Endpoint</th>
            <th scope="col">Status</th>
            <th scope="col">Success rate ({HOURS} h)</th>
            <th scope="col">Backlog</th>
            <th scope="col">Dead letters</th>
            <th scope="col">Next retry</th>
            <th scope="col">Last success</th>
            <th scope="col">Last error</th>
          </tr>
        </thead>
        <tbody>
          {endpoints.map((e) => {
            const s = stats[e.id];
            const total = s ? s.success + s.failed : 0;
            return (
              <tr>
                <td>
                  {e.url}
                  <br />
                  <span class="muted">{e.id}</span>
                </td>
                <td>{e.status}</td>
                <td>{!s ? '…' : total ? `${Math.round((s.success * 1000) / total) / 10} % of ${total}` : 'no attempt'}</td>
                <td>{e.health.pendingCount}</td>
                <td>{e.health.deadLetterCount}</td>
                <td>{when(e.health.nextRetryAt)}</td>
                <td>{when(e.health.lastSuccessAt)}</td>
                <td>{e.health.lastError ? `${excerpt(e.health.lastError, 120)} (${when(e.health.lastErrorAt)})` : '—'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <BarChart
        title={`Attempt outcomes per hour, last ${HOURS} hours, all endpoints`}
        labels={labels}
        series={[
          { label: 'Success', values: sum('success'), color: '#1a7f37' },
          { label: 'Failed', values: sum('failed'), color: '#b42318' },
        ]}
      />
    </>
  );
}
