// The dead-letter queue: an endpoint's DEAD_LETTER deliveries, redelivered one by one or in bulk
// (bulkRedeliverWebhookDeliveries over an endpoint and a time range, its job polled for progress).
import { useEffect, useState } from 'preact/hooks';
import { explain, request, type Session } from '../api';
import { BulkRedeliverMutation, DeliveriesQuery, RedeliverMutation, RedeliveryJobQuery } from '../operations';
import type { ConsoleDeliveriesQuery, ConsoleRedeliveryJobQuery } from '../generated/graphql';
import { when } from '../format';
import { useEndpoints } from './endpoint-picker';

type Delivery = ConsoleDeliveriesQuery['webhookEndpoint']['deliveries']['nodes'][number];
type Job = ConsoleRedeliveryJobQuery['webhookRedeliveryJob'];
const PAGES = 10;

/** Every delivery of the endpoint (newest first, up to PAGES pages of 500). */
export async function allDeliveries(session: Session, endpointId: string): Promise<Delivery[]> {
  const out: Delivery[] = [];
  let after: string | null | undefined;
  for (let i = 0; i < PAGES; i++) {
    const page = (await request(session, DeliveriesQuery, { endpointId, after, first: 500 })).webhookEndpoint.deliveries;
    out.push(...page.nodes);
    if (!page.pageInfo.hasNextPage) break;
    after = page.pageInfo.endCursor;
  }
  return out;
}

const localInput = (d: Date) => new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);

export function DeadLettersPage({ session }: { session: Session }) {
  const { endpoints, error: endpointsError } = useEndpoints(session);
  const [endpointId, setEndpointId] = useState('');
  const [dead, setDead] = useState<Delivery[] | null>(null);
  const [done, setDone] = useState<Record<string, string>>({});
  const [error, setError] = useState('');
  const [job, setJob] = useState<Job | null>(null);
  const [n, setN] = useState(0);
  useEffect(() => {
    if (!endpointId && endpoints?.length) setEndpointId(endpoints.find((e) => e.health.deadLetterCount > 0)?.id ?? endpoints[0]!.id);
  }, [endpoints]);
  useEffect(() => {
    if (!endpointId) return;
    setDead(null);
    allDeliveries(session, endpointId).then(
      (all) => setDead(all.filter((d) => d.status === 'DEAD_LETTER')),
      (e) => setError(explain(e)),
    );
  }, [endpointId, n]);
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
  async function redeliver(id: string) {
    try {
      const r = await request(session, RedeliverMutation, { id });
      setDone((d) => ({ ...d, [id]: r.redeliverWebhookDelivery.id }));
    } catch (e) {
      setError(explain(e));
    }
  }
  async function bulk(e: Event) {
    e.preventDefault();
    const form = new FormData(e.target as HTMLFormElement);
    setError('');
    try {
      const eventType = String(form.get('eventType') ?? '').trim();
      const r = await request(session, BulkRedeliverMutation, {
        input: {
          endpointId,
          since: new Date(String(form.get('since'))).toISOString(),
          until: new Date(String(form.get('until'))).toISOString(),
          ...(eventType ? { eventType } : {}),
        },
      });
      setJob({ ...r.bulkRedeliverWebhookDeliveries, error: null, completedAt: null });
    } catch (err) {
      setError(explain(err));
    }
  }
  if (endpointsError)
    return (
      <p class="error" role="alert">
        {endpointsError}
      </p>
    );
  if (!endpoints) return <p role="status">Loading endpoints…</p>;
  if (!endpoints.length) return <p>The organization has no webhook endpoint.</p>;
  const now = new Date();
  return (
    <>
      <p>
        <label>
          Endpoint{' '}
          <select value={endpointId} onChange={(e) => setEndpointId((e.target as HTMLSelectElement).value)}>
            {endpoints.map((e) => (
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
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <h2>Bulk redeliver</h2>
      <form class="filters" onSubmit={bulk}>
        <label>
          Created from <input name="since" type="datetime-local" required defaultValue={localInput(new Date(now.getTime() - 24 * 3600_000))} />
        </label>
        <label>
          until <input name="until" type="datetime-local" required defaultValue={localInput(new Date(now.getTime() + 60_000))} />
        </label>
        <label>
          Event type (optional) <input name="eventType" placeholder="transaction.settled" />
        </label>
        <button type="submit" disabled={!!job && (job.status === 'PENDING' || job.status === 'RUNNING')}>
          Redeliver all in range
        </button>
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
      <h2>Dead-lettered deliveries</h2>
      {!dead ? (
        <p role="status">Loading…</p>
      ) : dead.length === 0 ? (
        <p>No dead-lettered delivery on this endpoint.</p>
      ) : (
        <table class="data" aria-label="Dead-lettered deliveries">
          <thead>
            <tr>
              <th scope="col">Delivery</th>
              <th scope="col">Event type</th>
              <th scope="col">Attempts</th>
              <th scope="col">Created</th>
              <th scope="col">Dead-lettered</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            {dead.map((d) => (
              <tr data-delivery-id={d.id}>
                <td>
                  <a href={`#/deliveries/${d.id}`}>{d.id}</a>
                </td>
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
      )}
    </>
  );
}
