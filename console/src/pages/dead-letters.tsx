// The dead-letter queue: the server's webhookDeadLetters connection (by organization, endpoint, event
// type and creation time, newest first, 50 a page), redelivered one by one or in bulk
// (bulkRedeliverWebhookDeliveries over an endpoint and a time range, its job polled for progress).
// Members see their organization's; operators every organization's, or one's.
import { useEffect, useState } from 'preact/hooks';
import { explain, request, type Session } from '../api';
import { BulkRedeliverMutation, DeadLettersQuery, RedeliverMutation, RedeliveryJobQuery } from '../operations';
import type { ConsoleDeadLettersQuery, ConsoleRedeliveryJobQuery } from '../generated/graphql';
import { when } from '../format';
import { OrganizationFilter, organizationOf, useEndpoints } from './endpoint-picker';

type Page = ConsoleDeadLettersQuery['webhookDeadLetters'];
type Delivery = Page['edges'][number]['node'];
type Job = ConsoleRedeliveryJobQuery['webhookRedeliveryJob'];
interface Range {
  since: string;
  until: string;
  eventType: string;
}

const localInput = (d: Date) => new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
const iso = (local: string) => (local ? new Date(local).toISOString() : null);

export function DeadLettersPage({ session }: { session: Session }) {
  const [orgTyped, setOrgTyped] = useState('');
  const org = session.kind === 'member' ? session.organizationId : organizationOf(orgTyped);
  const { endpoints, error: endpointsError } = useEndpoints(session, org);
  const [endpointId, setEndpointId] = useState('');
  const [range, setRange] = useState<Range>(() => ({
    since: localInput(new Date(Date.now() - 24 * 3600_000)),
    until: localInput(new Date(Date.now() + 60_000)),
    eventType: '',
  }));
  // The filter of the list: none at first (the whole queue), the range once "Show" is pressed.
  const [applied, setApplied] = useState<Range | null>(null);
  const [rows, setRows] = useState<Delivery[] | null>(null);
  const [page, setPage] = useState<Page | null>(null);
  const [done, setDone] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [job, setJob] = useState<Job | null>(null);
  const [n, setN] = useState(0);

  const variables = (after: string | null) => ({
    organizationId: org,
    endpointId: endpointId || null,
    eventType: applied?.eventType.trim() || null,
    createdAfter: applied ? iso(applied.since) : null,
    createdBefore: applied ? iso(applied.until) : null,
    after,
  });
  useEffect(() => setEndpointId(''), [org]);
  useEffect(() => {
    setRows(null);
    setError('');
    request(session, DeadLettersQuery, variables(null)).then(
      (r) => {
        setPage(r.webhookDeadLetters);
        setRows(r.webhookDeadLetters.edges.map((e) => e.node));
      },
      (e) => setError(explain(e)),
    );
  }, [session, org, endpointId, applied, n]);
  useEffect(() => {
    if (!job || job.status === 'COMPLETED' || job.status === 'FAILED') return;
    const t = setTimeout(
      () =>
        request(session, RedeliveryJobQuery, { id: job.id }).then(
          (r) => setJob(r.webhookRedeliveryJob),
          (e) => setError(explain(e)),
        ),
      500,
    );
    return () => clearTimeout(t);
  }, [job]);

  async function more() {
    if (!page?.pageInfo.endCursor) return;
    try {
      const r = await request(session, DeadLettersQuery, variables(page.pageInfo.endCursor));
      setPage(r.webhookDeadLetters);
      setRows((old) => [...(old ?? []), ...r.webhookDeadLetters.edges.map((e) => e.node)]);
    } catch (e) {
      setError(explain(e));
    }
  }
  async function redeliver(id: string) {
    try {
      const r = await request(session, RedeliverMutation, { id });
      setDone((d) => ({ ...d, [id]: r.redeliverWebhookDelivery.id }));
    } catch (e) {
      setError(explain(e));
    }
  }
  async function bulk() {
    setError('');
    if (!endpointId) return setError('Choose an endpoint: bulk redelivery runs over one endpoint.');
    try {
      const eventType = range.eventType.trim();
      const r = await request(session, BulkRedeliverMutation, {
        input: { endpointId, since: iso(range.since)!, until: iso(range.until)!, ...(eventType ? { eventType } : {}) },
      });
      setJob({ ...r.bulkRedeliverWebhookDeliveries, error: null, completedAt: null });
    } catch (err) {
      setError(explain(err));
    }
  }
  const set = (k: keyof Range) => (e: Event) => setRange({ ...range, [k]: (e.target as HTMLInputElement).value });
  const urlOf = new Map((endpoints ?? []).map((e) => [e.id, e.url]));
  const running = !!job && (job.status === 'PENDING' || job.status === 'RUNNING');
  return (
    <>
      {session.kind === 'operator' && (
        <OrganizationFilter
          value={orgTyped}
          onChange={setOrgTyped}
          hint={org ? 'One organization’s queue.' : 'Empty: every organization’s dead letters. An organization id lists its endpoints.'}
        />
      )}
      <p>
        <label>
          Endpoint{' '}
          <select value={endpointId} onChange={(e) => setEndpointId((e.target as HTMLSelectElement).value)} disabled={!endpoints?.length}>
            <option value="">{org ? 'All endpoints' : 'All endpoints of every organization'}</option>
            {(endpoints ?? []).map((e) => (
              <option value={e.id}>
                {e.url} ({e.health.deadLetterCount} dead)
              </option>
            ))}
          </select>
        </label>{' '}
        <button type="button" onClick={() => setN(n + 1)}>
          Refresh
        </button>
      </p>
      {(error || endpointsError) && (
        <p class="error" role="alert">
          {error || endpointsError}
        </p>
      )}
      <h2>Range</h2>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({ ...range });
        }}
      >
        <label>
          Created from <input name="since" type="datetime-local" required value={range.since} onInput={set('since')} />
        </label>
        <label>
          until <input name="until" type="datetime-local" required value={range.until} onInput={set('until')} />
        </label>
        <label>
          Event type (optional) <input name="eventType" placeholder="transaction.settled" value={range.eventType} onInput={set('eventType')} />
        </label>
        <button type="submit">Show in range</button>
        {applied && (
          <button type="button" onClick={() => setApplied(null)}>
            Show all
          </button>
        )}
        <button type="button" onClick={bulk} disabled={running || !endpointId} aria-describedby="bulk-hint">
          Redeliver all in range
        </button>
        <span id="bulk-hint" class="muted">
          {endpointId ? 'Every dead letter of the endpoint created in the range, once.' : 'Choose an endpoint to redeliver in bulk.'}
        </span>
      </form>
      {job && (
        <p role="status" aria-live="polite" class="progress">
          <label for="bulk-progress">
            Bulk redelivery {job.status}: {job.redelivered} of {job.total}
          </label>{' '}
          <progress id="bulk-progress" max={Math.max(job.total, 1)} value={job.redelivered} />
          {job.error && <span class="error"> {job.error}</span>}
        </p>
      )}
      <h2>Dead-lettered deliveries{page ? ` (${page.totalCount})` : ''}</h2>
      {!rows ? (
        error ? null : (
          <p role="status">Loading…</p>
        )
      ) : rows.length === 0 ? (
        <p>No dead-lettered delivery{applied ? ' in this range' : ''}.</p>
      ) : (
        <>
          <table class="data" aria-label="Dead-lettered deliveries">
            <thead>
              <tr>
                <th scope="col">Delivery</th>
                {session.kind === 'operator' && <th scope="col">Organization</th>}
                <th scope="col">Endpoint</th>
                <th scope="col">Event type</th>
                <th scope="col">Attempts</th>
                <th scope="col">Created</th>
                <th scope="col">Dead-lettered</th>
                <th scope="col">Action</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((d) => (
                <tr data-delivery-id={d.id} data-endpoint-id={d.endpointId}>
                  <td>
                    <a href={`#/deliveries/${d.id}`}>{d.id}</a>
                  </td>
                  {session.kind === 'operator' && <td>{d.organizationId}</td>}
                  <td>{urlOf.get(d.endpointId) ?? d.endpointId}</td>
                  <td>{d.eventType}</td>
                  <td>{d.attemptCount}</td>
                  <td>{when(d.createdAt)}</td>
                  <td>{when(d.deadLetteredAt)}</td>
                  <td>
                    {done[d.id] ? (
                      <span role="status">
                        Redelivered as <a href={`#/deliveries/${done[d.id]}`}>{done[d.id]}</a>
                      </span>
                    ) : (
                      <button type="button" onClick={() => redeliver(d.id)} aria-label={`Redeliver ${d.id}`}>
                        Redeliver
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {page?.pageInfo.hasNextPage && (
            <p>
              <button type="button" onClick={more}>
                Load more
              </button>
            </p>
          )}
        </>
      )}
    </>
  );
}
