import { useEffect, useState } from 'preact/hooks';
import { explain, request, type Session } from '../api';
import { EndpointsQuery } from '../operations';
import type { ConsoleEndpointsQuery } from '../generated/graphql';

export type Endpoint = ConsoleEndpointsQuery['webhookEndpoints'][number];
/** The hours of the health window and its chart. */
export const HEALTH_HOURS = 12;

/**
 * An organization's endpoints with their health (webhookEndpoints { health }): a member's own
 * organization; for an operator, the one typed in (null: none chosen yet, nothing loaded).
 */
export function useEndpoints(session: Session, organizationId: string | null): { endpoints: Endpoint[] | null; error: string; reload: () => void } {
  const [endpoints, setEndpoints] = useState<Endpoint[] | null>(null);
  const [error, setError] = useState('');
  const [n, setN] = useState(0);
  const org = session.kind === 'member' ? session.organizationId : organizationId;
  useEffect(() => {
    setEndpoints(null);
    setError('');
    if (!org) return;
    request(session, EndpointsQuery, { organizationId: org, windowHours: HEALTH_HOURS }).then(
      (r) => setEndpoints(r.webhookEndpoints),
      (e) => setError(explain(e)),
    );
  }, [session, org, n]);
  return { endpoints, error, reload: () => setN(n + 1) };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An operator's organization filter: the id typed in, once it is a whole UUID (null otherwise). */
export function OrganizationFilter({ value, onChange, hint }: { value: string; onChange: (v: string) => void; hint: string }) {
  return (
    <p>
      <label>
        Organization{' '}
        <input
          value={value}
          onInput={(e) => onChange((e.target as HTMLInputElement).value)}
          placeholder="organization id"
          size={38}
          aria-describedby="org-hint"
        />
      </label>{' '}
      <span id="org-hint" class="muted">
        {hint}
      </span>
    </p>
  );
}
export const organizationOf = (typed: string): string | null => (UUID.test(typed.trim()) ? typed.trim().toLowerCase() : null);
