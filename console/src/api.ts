// The console's one way to the service: GraphQL over HTTP (POST /graphql) and graphql-ws on the same
// path, with the signed-in credential as a header (never in a URL). Every action is an API call the
// service authorizes and audits under that credential: the console has no privileges of its own.
import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print } from 'graphql/language/printer';
import { createClient, type Client } from 'graphql-ws';

export type Session = { kind: 'operator'; key: string } | { kind: 'member'; token: string; organizationId: string; email: string; expiresAt: string };

/** The session lives in this tab's sessionStorage (gone when the tab closes), never in the URL or localStorage. */
const STORAGE_KEY = 'ftis-console-session';

export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return null;
    const s = JSON.parse(raw) as Session;
    if (s.kind === 'member' && Date.parse(s.expiresAt) <= Date.now()) return null;
    return s;
  } catch {
    return null;
  }
}
export function saveSession(s: Session | null) {
  if (s) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(s));
  else sessionStorage.removeItem(STORAGE_KEY);
}

export function credentialHeaders(s: Session): Record<string, string> {
  return s.kind === 'operator' ? { 'x-operator-key': s.key } : { authorization: `Bearer ${s.token}` };
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

/** A clear sentence for a refusal the console expects. */
export function explain(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.code === 'UNAUTHENTICATED') return 'The credential was not accepted: check it and sign in again.';
    if (e.code === 'FORBIDDEN') return `Not allowed with this credential: ${e.message}`;
    return e.message;
  }
  return e instanceof Error ? e.message : String(e);
}

const printed = new WeakMap<object, string>();
const text = (doc: TypedDocumentNode<unknown, unknown>) => {
  let t = printed.get(doc);
  if (!t) printed.set(doc, (t = print(doc)));
  return t;
};

export async function request<R, V>(session: Session | null, doc: TypedDocumentNode<R, V>, variables: V): Promise<R> {
  let res: Response;
  try {
    res = await fetch('/graphql', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json, application/json',
        ...(session ? credentialHeaders(session) : {}),
      },
      body: JSON.stringify({ query: text(doc as TypedDocumentNode<unknown, unknown>), variables }),
    });
  } catch {
    throw new ApiError('The service cannot be reached.', 'NETWORK');
  }
  let body: { data?: R | null; errors?: { message: string; extensions?: { code?: string } }[] };
  try {
    body = await res.json();
  } catch {
    throw new ApiError(`The service answered ${res.status}.`, 'HTTP');
  }
  const error = body.errors?.[0];
  if (error) throw new ApiError(error.message, error.extensions?.code ?? 'ERROR');
  return body.data as R;
}

let socket: { client: Client; owner: Session } | undefined;

/** One graphql-ws socket per session: the credential goes in connectionParams (same names as the HTTP headers). */
function socketFor(session: Session): Client {
  if (socket?.owner === session) return socket.client;
  socket?.client.dispose();
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
  const client = createClient({ url, connectionParams: credentialHeaders(session), lazy: true, retryAttempts: 5 });
  socket = { client, owner: session };
  return client;
}

export function closeSocket() {
  socket?.client.dispose();
  socket = undefined;
}

export function subscribe<R, V>(
  session: Session,
  doc: TypedDocumentNode<R, V>,
  variables: V,
  on: { next: (data: R) => void; error: (message: string) => void; connected?: () => void },
): () => void {
  const client = socketFor(session);
  // The socket is lazy: it opens (and acknowledges the credential) for this subscription.
  const offConnected = on.connected ? client.on('connected', on.connected) : () => undefined;
  const off = client.subscribe<R>(
    { query: text(doc as TypedDocumentNode<unknown, unknown>), variables: variables as Record<string, unknown> },
    {
      next: (r) => {
        if (r.errors?.length) on.error(r.errors[0]!.message);
        else if (r.data) on.next(r.data as R);
      },
      error: (e) => on.error(e instanceof Error ? e.message : (e as CloseEvent)?.reason || 'The live connection closed.'),
      complete: () => undefined,
    },
  );
  return () => {
    offConnected();
    off();
  };
}
