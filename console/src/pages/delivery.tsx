// A delivery's detail: payload, every attempt, the signature headers sent, the original of a redelivery.
import { useEffect, useState } from 'preact/hooks';
import { explain, request, type Session } from '../api';
import { DeliveryQuery, RedeliverMutation } from '../operations';
import type { ConsoleDeliveryQuery } from '../generated/graphql';
import { excerpt, prettyJson, when } from '../format';

type Delivery = ConsoleDeliveryQuery['webhookDelivery'];

export function DeliveryPage({ session, id }: { session: Session; id: string }) {
  const [d, setD] = useState<Delivery | null>(null);
  const [error, setError] = useState('');
  const [redelivered, setRedelivered] = useState('');
  useEffect(() => {
    setD(null);
    setError('');
    setRedelivered('');
    request(session, DeliveryQuery, { id }).then(
      (r) => setD(r.webhookDelivery),
      (e) => setError(explain(e)),
    );
  }, [session, id]);
  async function redeliver() {
    try {
      setRedelivered((await request(session, RedeliverMutation, { id })).redeliverWebhookDelivery.id);
    } catch (e) {
      setError(explain(e));
    }
  }
  if (error)
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  if (!d) return <p role="status">Loading {id}…</p>;
  return (
    <>
      <dl class="facts">
        <dt>Delivery</dt>
        <dd data-testid="delivery-id">{d.id}</dd>
        <dt>Status</dt>
        <dd>
          <span class={`badge ${d.status}`}>{d.status}</span>
        </dd>
        <dt>Event</dt>
        <dd>
          {d.eventType} <span class="muted">{d.eventId}</span>
        </dd>
        <dt>Organization</dt>
        <dd>{d.organizationId}</dd>
        <dt>Endpoint</dt>
        <dd>{d.endpointId}</dd>
        <dt>Environment</dt>
        <dd>{d.environmentType ?? '—'}</dd>
        <dt>Created</dt>
        <dd>{when(d.createdAt)}</dd>
        <dt>Next attempt</dt>
        <dd>{when(d.nextAttemptAt)}</dd>
        {d.deliveredAt && (
          <>
            <dt>Delivered</dt>
            <dd>{when(d.deliveredAt)}</dd>
          </>
        )}
        {d.deadLetteredAt && (
          <>
            <dt>Dead-lettered</dt>
            <dd>{when(d.deadLetteredAt)}</dd>
          </>
        )}
        {d.originalDeliveryId && (
          <>
            <dt>Redelivery of</dt>
            <dd>
              <a href={`#/deliveries/${d.originalDeliveryId}`}>{d.originalDeliveryId}</a>
            </dd>
          </>
        )}
      </dl>
      {d.status === 'DEAD_LETTER' && (
        <p>
          <button type="button" onClick={redeliver} disabled={!!redelivered}>
            Redeliver
          </button>{' '}
          {redelivered && (
            <span role="status">
              Redelivered as <a href={`#/deliveries/${redelivered}`}>{redelivered}</a>
            </span>
          )}
        </p>
      )}
      <h2>Attempts</h2>
      {d.attempts.length === 0 ? (
        <p>No attempt yet.</p>
      ) : (
        <table class="data" aria-label="Attempts">
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">At</th>
              <th scope="col">Outcome</th>
              <th scope="col">Status</th>
              <th scope="col">Latency</th>
              <th scope="col">Response excerpt or error</th>
              <th scope="col">Signature headers sent</th>
            </tr>
          </thead>
          <tbody>
            {d.attempts.map((a) => (
              <tr>
                <td>{a.attemptNumber}</td>
                <td>{when(a.attemptedAt)}</td>
                <td>{a.outcome}</td>
                <td>{a.statusCode ?? '—'}</td>
                <td>{a.latencyMs} ms</td>
                <td>
                  <code class="excerpt">{excerpt(a.responseBody ?? a.error)}</code>
                </td>
                <td>
                  <code class="headers">
                    X-Webhook-Delivery-Id: {d.id}
                    {'\n'}X-Webhook-Timestamp: {Math.floor(Date.parse(a.attemptedAt) / 1000)}
                    {'\n'}X-Webhook-Signature: (hex HMAC-SHA256 of "timestamp." + body with the endpoint secret then in force; not stored)
                  </code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Payload</h2>
      <pre class="payload" tabIndex={0} aria-label="Payload">
        {prettyJson(d.payload)}
      </pre>
    </>
  );
}
