// The live delivery stream: the webhookDeliveryStatus subscription (graphql-ws). Filters apply to
// what is shown; pausing freezes the table and keeps what arrives meanwhile, shown on resume.
import { useEffect, useRef, useState } from 'preact/hooks';
import { subscribe, type Session } from '../api';
import { DeliveryStatusSubscription } from '../operations';
import type { ConsoleDeliveryStatusSubscription } from '../generated/graphql';
import { time } from '../format';

export type Change = ConsoleDeliveryStatusSubscription['webhookDeliveryStatus'] & { seenAt: number };
const MAX_ROWS = 500;
const OUTCOMES = ['SUCCESS', 'HTTP_ERROR', 'TIMEOUT', 'CONNECTION_REFUSED', 'CONNECTION_ERROR', 'DNS_ERROR', 'TLS_ERROR', 'BLOCKED_DESTINATION'];

export function StreamPage({ session }: { session: Session }) {
  const [rows, setRows] = useState<Change[]>([]);
  const [held, setHeld] = useState<Change[]>([]);
  const [paused, setPaused] = useState(false);
  const [state, setState] = useState('Connecting');
  const [filters, setFilters] = useState({ organizationId: '', endpointId: '', eventType: '', outcome: '' });
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  useEffect(() => {
    setState('Connecting');
    return subscribe(session, DeliveryStatusSubscription, session.kind === 'member' ? { organizationId: session.organizationId } : {}, {
      next: ({ webhookDeliveryStatus: c }) => {
        const row = { ...c, seenAt: Date.now() };
        if (pausedRef.current) setHeld((h) => [row, ...h]);
        else setRows((r) => [row, ...r].slice(0, MAX_ROWS));
      },
      error: (m) => setState(`Disconnected: ${m}`),
      connected: () => setState('Live'),
    });
  }, [session]);
  function togglePause() {
    if (paused) {
      setRows((r) => [...held, ...r].slice(0, MAX_ROWS));
      setHeld([]);
    }
    setPaused(!paused);
  }
  const f = filters;
  const shown = rows.filter(
    (r) =>
      (!f.organizationId || r.organizationId === f.organizationId.trim()) &&
      (!f.endpointId || r.endpointId === f.endpointId.trim()) &&
      (!f.eventType || r.eventType.startsWith(f.eventType.trim())) &&
      (!f.outcome || (f.outcome === 'NONE' ? !r.outcome : r.outcome === f.outcome)),
  );
  const set = (k: keyof typeof filters) => (e: Event) => setFilters({ ...filters, [k]: (e.target as HTMLInputElement).value });
  return (
    <section aria-labelledby="stream-filters">
      <h2 id="stream-filters" class="visually-hidden">
        Filters
      </h2>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        {session.kind === 'operator' && (
          <label>
            Organization <input value={f.organizationId} onInput={set('organizationId')} placeholder="org_…" />
          </label>
        )}
        <label>
          Endpoint <input value={f.endpointId} onInput={set('endpointId')} placeholder="whe_…" />
        </label>
        <label>
          Event type <input value={f.eventType} onInput={set('eventType')} placeholder="transaction." />
        </label>
        <label>
          Outcome
          <select value={f.outcome} onChange={set('outcome')}>
            <option value="">Any</option>
            <option value="NONE">No attempt</option>
            {OUTCOMES.map((o) => (
              <option value={o}>{o}</option>
            ))}
          </select>
        </label>
        <button type="button" onClick={togglePause} aria-pressed={paused}>
          {paused ? `Resume (${held.length} waiting)` : 'Pause'}
        </button>
      </form>
      <p class="muted" role="status" aria-live="polite">
        {paused ? `Paused: ${held.length} new change(s) kept.` : `${state}.`} Showing {shown.length} of {rows.length}.
      </p>
      <table class="data" aria-label="Delivery status changes, newest first">
        <thead>
          <tr>
            <th scope="col">At</th>
            <th scope="col">Delivery</th>
            <th scope="col">Event type</th>
            <th scope="col">Change</th>
            <th scope="col">Status</th>
            <th scope="col">Attempts</th>
            <th scope="col">Outcome</th>
            {session.kind === 'operator' && <th scope="col">Organization</th>}
            <th scope="col">Endpoint</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((r) => (
            <tr key={`${r.deliveryId}-${r.at}-${r.kind}`} data-delivery-id={r.deliveryId} data-endpoint-id={r.endpointId} data-kind={r.kind} data-at={r.at}>
              <td>{time(r.at)}</td>
              <td>
                <a href={`#/deliveries/${r.deliveryId}`}>{r.deliveryId}</a>
                {r.originalDeliveryId && <span class="muted"> (redelivery)</span>}
              </td>
              <td>{r.eventType}</td>
              <td>{r.kind}</td>
              <td>
                <span class={`badge ${r.status}`}>{r.status}</span>
              </td>
              <td>{r.attemptCount}</td>
              <td>{r.outcome ? `${r.outcome}${r.statusCode ? ` ${r.statusCode}` : ''}` : '—'}</td>
              {session.kind === 'operator' && <td>{r.organizationId}</td>}
              <td>{r.endpointId}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
