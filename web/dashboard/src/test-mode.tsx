// Test mode and the organization's display settings, for every page: which environment the dashboard
// shows (production, or sandbox in test mode), remembered per organization in this browser, opening in
// test mode for an organization the operator marked so (the demo merchant); and the time zone times
// are shown in. A page joins test mode by passing useEnvironment() to the API as `environment`.
import { createContext, type ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import { api } from './api.ts';
import { setDisplayTimeZone } from './format.ts';
import type { Environment, Organization, Session } from './types.ts';
import { Loading } from './ui.tsx';

interface OrganizationState {
  organization: Organization | undefined;
  environment: Environment;
  /** The zone times are shown in (format.ts reads it; components read this to re-render on a change). */
  timeZone: string;
  setTestMode: (on: boolean) => void;
  /** After a change of the profile (Settings): the new record, applied at once. */
  setOrganization: (organization: Organization) => void;
}

const OrganizationContext = createContext<OrganizationState | null>(null);

function useOrganizationState(): OrganizationState {
  const state = useContext(OrganizationContext);
  if (!state) throw new Error('OrganizationProvider is missing');
  return state;
}

/** The environment the pages show: 'sandbox' in test mode. */
export function useEnvironment(): Environment {
  return useOrganizationState().environment;
}

export function useTestMode(): [boolean, (on: boolean) => void] {
  const { environment, setTestMode } = useOrganizationState();
  return [environment === 'sandbox', setTestMode];
}

/** The display time zone; the shell reads it so that every page re-renders when it changes. */
export function useTimeZone(): string {
  return useOrganizationState().timeZone;
}

export function useOrganization(): Pick<OrganizationState, 'organization' | 'setOrganization'> {
  const { organization, setOrganization } = useOrganizationState();
  return { organization, setOrganization };
}

const storageKey = (session: Session, what: string) => `kassa.${what}.${session.organization.id}`;

function remembered(key: string): string | null {
  try {
    return window.localStorage.getItem(key);
  } catch {
    return null;
  }
}

function remember(key: string, value: string): void {
  try {
    window.localStorage.setItem(key, value);
  } catch {
    // Private windows may refuse storage: the choice then lasts as long as the page.
  }
}

export function OrganizationProvider({ session, children }: { session: Session; children: ReactNode }) {
  const modeKey = storageKey(session, 'test-mode');
  const zoneKey = storageKey(session, 'time-zone');
  const [organization, setOrganizationState] = useState<Organization>();
  const [testMode, setTestModeState] = useState<boolean | null>(() => {
    const stored = remembered(modeKey);
    return stored === null ? null : stored === '1';
  });
  const [zone, setZone] = useState(() => remembered(zoneKey));
  if (zone) setDisplayTimeZone(zone);

  const setOrganization = useCallback(
    (record: Organization) => {
      setOrganizationState(record);
      remember(zoneKey, record.time_zone);
      setZone(record.time_zone);
    },
    [zoneKey],
  );

  useEffect(() => {
    let live = true;
    api.get<Organization>('/organization/').then(
      (record) => {
        if (!live) return;
        setOrganization(record);
        setTestModeState((current) => current ?? record.test_mode_default);
      },
      () => {
        // The pages show their own errors; without the profile the dashboard opens in production.
        if (live) setTestModeState((current) => current ?? false);
      },
    );
    return () => {
      live = false;
    };
  }, [setOrganization]);

  const setTestMode = useCallback(
    (on: boolean) => {
      remember(modeKey, on ? '1' : '0');
      setTestModeState(on);
    },
    [modeKey],
  );

  const value = useMemo<OrganizationState>(
    () => ({
      organization,
      environment: testMode ? 'sandbox' : 'production',
      timeZone: zone ?? 'UTC',
      setTestMode,
      setOrganization,
    }),
    [organization, testMode, zone, setTestMode, setOrganization],
  );

  // Until the mode is known (first visit in this browser), pages would load the wrong environment.
  if (testMode === null) {
    return (
      <main className="center">
        <Loading label="Opening the dashboard…" />
      </main>
    );
  }
  return <OrganizationContext.Provider value={value}>{children}</OrganizationContext.Provider>;
}

/** The header's switch. */
export function TestModeSwitch() {
  const [on, setOn] = useTestMode();
  return (
    <button
      type="button"
      role="switch"
      aria-checked={on}
      className={on ? 'mode-switch on' : 'mode-switch'}
      onClick={() => setOn(!on)}
    >
      <span className="mode-track" aria-hidden="true">
        <span className="mode-thumb" />
      </span>
      <span>Test mode</span>
    </button>
  );
}

/** The band across the top in test mode. */
export function TestModeBand() {
  const [on] = useTestMode();
  if (!on) return null;
  return (
    <section className="test-band" aria-label="Test mode notice">
      <strong>Test mode</strong> You are looking at sandbox data: payments here are simulated and no real
      money moves.
    </section>
  );
}
