// The operator console: sign-in, navigation (hash routes: the URL holds a page, never a credential)
// and the pages. docs/console.md.
import 'uplot/dist/uPlot.min.css';
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiError, closeSocket, explain, loadSession, request, saveSession, type Session } from './api';
import { LoginMutation, OperatorProbeQuery, ViewerQuery } from './operations';
import { StreamPage } from './pages/stream';
import { DeliveryPage } from './pages/delivery';
import { DeadLettersPage } from './pages/dead-letters';
import { EndpointsPage } from './pages/endpoints';
import { StuckPage } from './pages/stuck';
import { DashboardPage } from './pages/dashboard';

interface Route {
  path: string;
  title: string;
  /** Who the API lets read it: webhook data is the organization's members' and the operators'; platform views are operators'. */
  who: 'any' | 'operator';
}
export const routes: Route[] = [
  { path: 'stream', title: 'Live deliveries', who: 'any' },
  { path: 'dead-letters', title: 'Dead letters', who: 'any' },
  { path: 'endpoints', title: 'Endpoint health', who: 'any' },
  { path: 'stuck', title: 'Stuck money', who: 'operator' },
  { path: 'dashboard', title: 'Platform dashboard', who: 'operator' },
];

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash.replace(/^#\/?/, '') || 'stream';
}

function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [mode, setMode] = useState<'operator' | 'member'>('operator');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  async function submit(e: Event) {
    e.preventDefault();
    const form = new FormData(e.target as HTMLFormElement);
    setBusy(true);
    setError('');
    try {
      if (mode === 'operator') {
        const session: Session = { kind: 'operator', key: String(form.get('operatorKey') ?? '').trim() };
        await request(session, OperatorProbeQuery, {});
        onSignedIn(session);
      } else {
        const email = String(form.get('email') ?? '').trim();
        const { login } = await request(null, LoginMutation, { input: { email, password: String(form.get('password') ?? '') } });
        onSignedIn({ kind: 'member', token: login.accessToken, organizationId: login.organizationId, email, expiresAt: login.accessTokenExpiresAt });
      }
    } catch (err) {
      setError(
        // Any refusal of the credential (malformed, unknown, revoked, wrong password) reads the same.
        err instanceof ApiError && !['NETWORK', 'HTTP', 'INTERNAL'].includes(err.code)
          ? mode === 'operator'
            ? 'Sign-in failed: this operator key is not valid.'
            : 'Sign-in failed: wrong email or password.'
          : `Sign-in failed: ${explain(err)}`,
      );
    } finally {
      setBusy(false);
    }
  }
  return (
    <main id="main" class="signin">
      <h1>ftis operator console</h1>
      <form onSubmit={submit} aria-describedby={error ? 'signin-error' : undefined}>
        <fieldset>
          <legend>Sign in as</legend>
          <label>
            <input type="radio" name="mode" checked={mode === 'operator'} onChange={() => setMode('operator')} /> Platform operator (operator key)
          </label>
          <label>
            <input type="radio" name="mode" checked={mode === 'member'} onChange={() => setMode('member')} /> Organization member (email and password)
          </label>
        </fieldset>
        {mode === 'operator' ? (
          <p>
            <label for="operatorKey">Operator key</label>
            <input id="operatorKey" name="operatorKey" type="password" autocomplete="off" required />
          </p>
        ) : (
          <>
            <p>
              <label for="email">Email</label>
              <input id="email" name="email" type="email" autocomplete="username" required />
            </p>
            <p>
              <label for="password">Password</label>
              <input id="password" name="password" type="password" autocomplete="current-password" required />
            </p>
          </>
        )}
        {error && (
          <p id="signin-error" class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p class="muted">The credential stays in this tab's session storage; it never appears in a URL.</p>
    </main>
  );
}

function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const [who, setWho] = useState('');
  const hash = useHash();
  useEffect(() => {
    if (!session) return;
    if (session.kind === 'operator') setWho('Platform operator');
    else
      request(session, ViewerQuery, {}).then(
        (r) => setWho(`${r.viewer.email} (${r.viewer.role})`),
        () => setWho(session.email),
      );
  }, [session]);
  const signIn = (s: Session) => {
    saveSession(s);
    setSession(s);
  };
  const signOut = () => {
    closeSocket();
    saveSession(null);
    setSession(null);
  };
  if (!session) return <SignIn onSignedIn={signIn} />;
  const [page, arg] = hash.split('/');
  const route = routes.find((r) => r.path === page);
  const allowed = (r: Route) => r.who === 'any' || r.who === session.kind;
  let content;
  if (page === 'deliveries' && arg) content = <DeliveryPage session={session} id={decodeURIComponent(arg)} />;
  else if (!route) content = <p>No such page.</p>;
  else if (!allowed(route)) content = <p class="notice">This page is the platform operators’: sign in with an operator key.</p>;
  else if (page === 'stream') content = <StreamPage session={session} />;
  else if (page === 'dead-letters') content = <DeadLettersPage session={session} />;
  else if (page === 'endpoints') content = <EndpointsPage session={session} />;
  else if (page === 'stuck') content = <StuckPage session={session} />;
  else content = <DashboardPage session={session} />;
  const title = page === 'deliveries' ? 'Delivery' : (route?.title ?? 'Not found');
  document.title = `${title} · ftis console`;
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="bar">
        <strong>ftis console</strong>
        <nav aria-label="Pages">
          {routes.filter(allowed).map((r) => (
            <a href={`#/${r.path}`} aria-current={r.path === page ? 'page' : undefined}>
              {r.title}
            </a>
          ))}
        </nav>
        <span class="who">{who}</span>
        <button type="button" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <h1>{title}</h1>
        {content}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
