// Stuck money: settlements, refunds, withdrawals and deposits idle past the threshold (stuckOperations).
import { useEffect, useState } from 'preact/hooks';
import { explain, request, type Session } from '../api';
import { StuckOperationsQuery } from '../operations';
import type { ConsoleStuckOperationsQuery } from '../generated/graphql';
import { age, excerpt, when } from '../format';

export function StuckPage({ session }: { session: Session }) {
  const [rows, setRows] = useState<ConsoleStuckOperationsQuery['stuckOperations'] | null>(null);
  const [error, setError] = useState('');
  const [minutes, setMinutes] = useState('');
  useEffect(() => {
    setRows(null);
    request(session, StuckOperationsQuery, minutes ? { olderThanSeconds: Math.round(Number(minutes) * 60) } : {}).then(
      (r) => setRows(r.stuckOperations),
      (e) => setError(explain(e)),
    );
  }, [session, minutes]);
  return (
    <>
      <form class="filters" onSubmit={(e) => (e.preventDefault(), setMinutes(String(new FormData(e.target as HTMLFormElement).get('minutes') ?? '')))}>
        <label>
          Idle for more than (minutes; empty: the service's STUCK_AFTER_SECONDS) <input name="minutes" type="number" min="0" step="1" defaultValue={minutes} />
        </label>
        <button type="submit">Apply</button>
      </form>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {!rows ? (
        <p role="status">Loading…</p>
      ) : rows.length === 0 ? (
        <p>Nothing is stuck.</p>
      ) : (
        <table class="data" aria-label="Stuck operations, oldest first">
          <thead>
            <tr>
              <th scope="col">Kind</th>
              <th scope="col">Id</th>
              <th scope="col">Status</th>
              <th scope="col">Age</th>
              <th scope="col">Since</th>
              <th scope="col">Organization</th>
              <th scope="col">Job</th>
              <th scope="col">Last error</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr>
                <td>{r.kind}</td>
                <td>{r.id}</td>
                <td>{r.status}</td>
                <td>{age(r.ageSeconds)}</td>
                <td>{when(r.since)}</td>
                <td>{r.organizationId}</td>
                <td>{r.jobState ?? '—'}</td>
                <td>{excerpt(r.lastError, 160) || '—'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
