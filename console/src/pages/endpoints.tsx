// Endpoint health: per endpoint its success rate, last error, backlog and next retry, and a chart of
// attempt outcomes per hour: all of it WebhookEndpoint.health(windowHours), computed by the server
// with aggregates over the window. Members: their organization; operators: the one typed in.
import { useState } from 'preact/hooks';
import type { Session } from '../api';
import { BarChart } from '../chart';
import { excerpt, when } from '../format';
import { HEALTH_HOURS, OrganizationFilter, organizationOf, useEndpoints } from './endpoint-picker';

export function EndpointsPage({ session }: { session: Session }) {
  const [orgTyped, setOrgTyped] = useState('');
  const org = session.kind === 'member' ? session.organizationId : organizationOf(orgTyped);
  const { endpoints, error } = useEndpoints(session, org);
  const filter = session.kind === 'operator' && <OrganizationFilter value={orgTyped} onChange={setOrgTyped} hint="The organization whose endpoints to show." />;
  if (error)
    return (
      <>
        {filter}
        <p class="error" role="alert">
          {error}
        </p>
      </>
    );
  if (!org)
    return (
      <>
        {filter}
        <p>Type an organization id to see its endpoints’ health.</p>
      </>
    );
  if (!endpoints)
    return (
      <>
        {filter}
        <p role="status">Loading endpoints…</p>
      </>
    );
  if (!endpoints.length)
    return (
      <>
        {filter}
        <p>The organization has no webhook endpoint.</p>
      </>
    );
  // Every endpoint's window has the same hours (the server's clock, whole UTC hours).
  const hours = endpoints[0]!.health.outcomesPerHour.map((h) => h.hour);
  const labels = hours.map((h) => `${String(new Date(h).getHours()).padStart(2, '0')}h`);
  const sum = (k: 'successes' | 'failures') => hours.map((_, i) => endpoints.reduce((a, e) => a + (e.health.outcomesPerHour[i]?.[k] ?? 0), 0));
  return (
    <>
      {filter}
      <table class="data" aria-label={`Endpoints, attempts of the last ${HEALTH_HOURS} hours`}>
        <thead>
          <tr>
            <th scope="col">Endpoint</th>
            <th scope="col">Status</th>
            <th scope="col">Success rate ({HEALTH_HOURS} h)</th>
            <th scope="col">Backlog</th>
            <th scope="col">Dead letters</th>
            <th scope="col">Next retry</th>
            <th scope="col">Last success</th>
            <th scope="col">Last error</th>
          </tr>
        </thead>
        <tbody>
          {endpoints.map((e) => {
            const h = e.health;
            return (
              <tr data-endpoint-id={e.id}>
                <td>
                  {e.url}
                  <br />
                  <span class="muted">{e.id}</span>
                </td>
                <td>{e.status}</td>
                <td>{h.successRate == null ? 'no attempt' : `${Math.round(h.successRate * 1000) / 10} % of ${h.attempts}`}</td>
                <td>{h.pendingCount}</td>
                <td>{h.deadLetterCount}</td>
                <td>{when(h.nextRetryAt)}</td>
                <td>{when(h.lastSuccessAt)}</td>
                <td>{h.lastError ? `${excerpt(h.lastError, 120)} (${when(h.lastErrorAt)})` : '—'}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <BarChart
        title={`Attempt outcomes per hour, last ${HEALTH_HOURS} hours, all endpoints`}
        labels={labels}
        series={[
          { label: 'Success', values: sum('successes'), color: '#1a7f37' },
          { label: 'Failed', values: sum('failures'), color: '#b42318' },
        ]}
      />
    </>
  );
}
