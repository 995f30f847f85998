import { useEffect, useState } from 'preact/hooks';
import { explain, request, type Session } from '../api';
import { EndpointsQuery } from '../operations';
import type { ConsoleEndpointsQuery } from '../generated/graphql';

export type Endpoint = ConsoleEndpointsQuery['webhookEndpoints'][number];

/** The member's organization's endpoints (webhookEndpoints), reloaded on demand. */
export function useEndpoints(session: Session): { endpoints: Endpoint[] | null; error: string; reload: () => void } {
  const [endpoints, setEndpoints] = useState<Endpoint[] | null>(null);
  const [error, setError] = useState('');
  const [n, setN] = useState(0);
  useEffect(() => {
    if (session.kind !== 'member') return;
    request(session, EndpointsQuery, { organizationId: session.organizationId }).then(
      (r) => setEndpoints(r.webhookEndpoints),
      (e) => setError(explain(e)),
    );
  }, [session, n]);
  return { endpoints, error, reload: () => setN(n + 1) };
}
