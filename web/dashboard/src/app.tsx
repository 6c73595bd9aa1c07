// The dashboard shell: who is logged in, the login page when nobody is (or the session ended),
// the navigation, and which page the URL shows.
import { type ReactNode, useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, errorText, onSessionEnded, request } from './api.ts';
import { AcceptInvitePage, ForgotPasswordPage, ResetPasswordPage } from './pages/account-links.tsx';
import { AuditPage } from './pages/audit.tsx';
import { DevelopersPage } from './pages/developers.tsx';
import { LinkDetailPage, LinksPage } from './pages/links.tsx';
import { LoginPage } from './pages/login.tsx';
import { MailPage, useDevMailbox } from './pages/mail.tsx';
import { OverviewPage } from './pages/overview.tsx';
import { PaymentDetailPage } from './pages/payment-detail.tsx';
import { PaymentsPage } from './pages/payments.tsx';
import { PayoutsPage } from './pages/payouts.tsx';
import { ProductsPage } from './pages/products.tsx';
import { ReauthDialog } from './pages/reauth-dialog.tsx';
import { RefundsPage } from './pages/refunds.tsx';
import { SecurityPage } from './pages/security.tsx';
import { SettingsPage } from './pages/settings.tsx';
import { PlansPage, SubscriptionDetailPage, SubscriptionsPage } from './pages/subscriptions.tsx';
import { TeamPage } from './pages/team.tsx';
import { WalletPage } from './pages/wallet.tsx';
import { SimulatedBanner } from './provider-notices.tsx';
import { Link, match, navigate, type Route, useRoute } from './router.tsx';
import { SearchBox, SearchPage } from './search.tsx';
import { OrganizationProvider, TestModeBand, TestModeSwitch, useTimeZone } from './test-mode.tsx';
import type { Session } from './types.ts';
import { Loading, PageHeader } from './ui.tsx';

type SessionState =
  | { status: 'checking' }
  | { status: 'unreachable'; message: string }
  | { status: 'anonymous'; ended: boolean }
  | { status: 'signed_in'; session: Session };

const NAVIGATION: { to: string; label: string; section: string }[] = [
  { to: '', label: 'Overview', section: '' },
  { to: 'payments', label: 'Payments', section: 'payments' },
  { to: 'refunds', label: 'Refunds', section: 'refunds' },
  { to: 'wallet', label: 'Wallet', section: 'wallet' },
  { to: 'links', label: 'Payment links', section: 'links' },
  { to: 'products', label: 'Products', section: 'products' },
  { to: 'subscriptions', label: 'Subscriptions', section: 'subscriptions' },
  { to: 'payouts', label: 'Payouts', section: 'payouts' },
  { to: 'developers', label: 'Developers', section: 'developers' },
  { to: 'settings', label: 'Settings', section: 'settings' },
  { to: 'team', label: 'Team', section: 'team' },
  { to: 'security', label: 'Security', section: 'security' },
  { to: 'audit', label: 'Audit log', section: 'audit' },
];

/** Pages for visitors without a session (reached from the login page or a mailed link). */
const PUBLIC_PATHS = new Set(['login', 'accept-invite', 'forgot-password', 'reset-password']);

function page(route: Route, session: Session, onSessionChanged: () => void): ReactNode {
  const { path } = route;
  // Until a member the organization requires two-factor of has set it up, only Security answers.
  if (session.two_factor_setup_required || path === 'security')
    return <SecurityPage session={session} onSessionChanged={onSessionChanged} />;
  if (path === 'team') return <TeamPage session={session} />;
  if (path === 'audit') return <AuditPage query={route.query} />;
  let params = match('payments/:id', path);
  if (params) return <PaymentDetailPage id={params.id} />;
  params = match('links/:id', path);
  if (params) return <LinkDetailPage id={params.id} />;
  params = match('subscriptions/:id', path);
  if (params) return <SubscriptionDetailPage id={params.id} />;
  params = match('developers/:tab', path);
  if (params) return <DevelopersPage tab={params.tab} session={session} />;
  switch (path) {
    case '':
      return <OverviewPage />;
    case 'payments':
      return <PaymentsPage query={route.query} />;
    case 'refunds':
      return <RefundsPage query={route.query} />;
    case 'links':
      return <LinksPage />;
    case 'products':
      return <ProductsPage />;
    case 'subscriptions':
      return <SubscriptionsPage query={route.query} />;
    case 'plans':
      return <PlansPage />;
    case 'payouts':
      return <PayoutsPage />;
    case 'developers':
      return <DevelopersPage tab="keys" session={session} />;
    case 'settings':
      return <SettingsPage />;
    case 'wallet':
      return <WalletPage />;
    case 'search':
      return <SearchPage query={route.query} />;
    case 'mail':
      return <MailPage query={route.query} />;
    default:
      return (
        <>
          <PageHeader title="Page not found" />
          <p>
            There is no dashboard page at this address. <Link to="">Go to the overview</Link>.
          </p>
        </>
      );
  }
}

function Shell({
  session,
  route,
  onLogout,
  onSessionChanged,
}: {
  session: Session;
  route: Route;
  onLogout: () => void;
  onSessionChanged: () => void;
}) {
  const [menuOpen, setMenuOpen] = useState(false);
  const section = route.path.split('/')[0];
  const mainRef = useRef<HTMLElement>(null);
  const first = useRef(true);
  const mailbox = useDevMailbox();
  // Read so that a change of the time zone (Settings) re-renders every page's times.
  useTimeZone();
  const navigation = mailbox ? [...NAVIGATION, { to: 'mail', label: 'Mail', section: 'mail' }] : NAVIGATION;

  // After a navigation, move focus to the new page's heading so screen readers announce it.
  // biome-ignore lint/correctness/useExhaustiveDependencies: runs on each path change by design.
  useEffect(() => {
    setMenuOpen(false);
    if (first.current) {
      first.current = false;
      return;
    }
    window.scrollTo(0, 0);
    const heading = mainRef.current?.querySelector<HTMLElement>('#page-title');
    heading?.focus({ preventScroll: true });
  }, [route.path]);

  return (
    <div className="layout">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <TestModeBand />
      <header className="topbar">
        <Link to="" className="brand">
          Kassa
        </Link>
        <span className="org-name" title={session.organization.name}>
          {session.organization.name}
        </span>
        <button
          type="button"
          className="menu-button"
          aria-expanded={menuOpen}
          aria-controls="main-nav"
          onClick={() => setMenuOpen((open) => !open)}
        >
          Menu
        </button>
        <SearchBox query={section === 'search' ? (route.query.get('q') ?? '') : ''} />
        <div className="account">
          <TestModeSwitch />
          <span className="muted user-email">{session.user.email}</span>
          <button type="button" className="button secondary small" onClick={onLogout}>
            Log out
          </button>
        </div>
      </header>
      <nav id="main-nav" className={menuOpen ? 'sidebar open' : 'sidebar'} aria-label="Main">
        <ul>
          {navigation.map((item) => (
            <li key={item.to}>
              <Link to={item.to} aria-current={section === item.section ? 'page' : undefined}>
                {item.label}
              </Link>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" ref={mainRef} tabIndex={-1}>
        <SimulatedBanner />
        {page(route, session, onSessionChanged)}
      </main>
      <ReauthDialog twoFactor={session.two_factor_enabled === true} />
    </div>
  );
}

export function App() {
  const [state, setState] = useState<SessionState>({ status: 'checking' });
  const route = useRoute();

  const checkSession = useCallback(async () => {
    try {
      const session = await request<Session>('GET', '/auth/me/', { expectUnauthorized: true });
      setState({ status: 'signed_in', session });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) setState({ status: 'anonymous', ended: false });
      else setState({ status: 'unreachable', message: errorText(error) });
    }
  }, []);

  useEffect(() => {
    void checkSession();
  }, [checkSession]);

  // Any 401 means the session is over: back to the login page, keeping where the user was.
  useEffect(
    () =>
      onSessionEnded(() =>
        setState((current) =>
          current.status === 'signed_in' ? { status: 'anonymous', ended: true } : current,
        ),
      ),
    [],
  );

  // Coming back to the tab after a while: ask whether the session is still alive.
  useEffect(() => {
    function onVisible() {
      if (document.visibilityState !== 'visible' || state.status !== 'signed_in') return;
      request('GET', '/auth/me/').catch(() => undefined);
    }
    document.addEventListener('visibilitychange', onVisible);
    return () => document.removeEventListener('visibilitychange', onVisible);
  }, [state.status]);

  const onLogin = useCallback((session: Session) => {
    setState({ status: 'signed_in', session });
    navigate(nextPath(), { replace: true });
  }, []);

  const onLogout = useCallback(async () => {
    try {
      await request('POST', '/auth/logout/', { body: {}, expectUnauthorized: true });
    } catch {
      // The session is gone either way.
    }
    setState({ status: 'anonymous', ended: false });
    navigate('login', { replace: true });
  }, []);

  const anonymous = state.status === 'anonymous';
  useEffect(() => {
    if (anonymous && !PUBLIC_PATHS.has(route.path)) {
      const here = route.path + (route.query.toString() ? `?${route.query.toString()}` : '');
      navigate(here ? `login?next=${encodeURIComponent(here)}` : 'login', { replace: true });
    }
  }, [anonymous, route.path, route.query]);

  switch (state.status) {
    case 'checking':
      return (
        <main className="center">
          <Loading label="Opening the dashboard…" />
        </main>
      );
    case 'unreachable':
      return (
        <main className="center">
          <div className="notice notice-error" role="alert">
            <p>{state.message}</p>
            <button type="button" className="button" onClick={() => void checkSession()}>
              Try again
            </button>
          </div>
        </main>
      );
    case 'anonymous':
      if (route.path === 'accept-invite') return <AcceptInvitePage onLogin={onLogin} />;
      if (route.path === 'forgot-password') return <ForgotPasswordPage />;
      if (route.path === 'reset-password') return <ResetPasswordPage />;
      return <LoginPage ended={state.ended} onLogin={onLogin} />;
    case 'signed_in':
      if (route.path === 'accept-invite') return <AcceptInvitePage onLogin={onLogin} />;
      if (route.path === 'reset-password') return <ResetPasswordPage />;
      if (route.path === 'login' || route.path === 'forgot-password') {
        return (
          <main className="center">
            <LoginRedirect />
          </main>
        );
      }
      return (
        <OrganizationProvider session={state.session}>
          <Shell
            session={state.session}
            route={route}
            onLogout={onLogout}
            onSessionChanged={() => void checkSession()}
          />
        </OrganizationProvider>
      );
  }
}

/** Where to go after logging in: the page the user was on (always a path inside the dashboard). */
function nextPath(): string {
  const next = new URLSearchParams(window.location.search).get('next') ?? '';
  return next.startsWith('login') ? '' : next;
}

function LoginRedirect() {
  useEffect(() => navigate(nextPath(), { replace: true }), []);
  return <Loading />;
}
