// A small history router under /dashboard/: the server answers every client path with index.html,
// so pages have real, shareable URLs; filters live in the query string.
import { type AnchorHTMLAttributes, type MouseEvent, useSyncExternalStore } from 'react';

export const BASE = '/dashboard/';

const listeners = new Set<() => void>();

function notify() {
  for (const listener of listeners) listener();
}

function subscribe(listener: () => void) {
  listeners.add(listener);
  window.addEventListener('popstate', listener);
  return () => {
    listeners.delete(listener);
    window.removeEventListener('popstate', listener);
  };
}

const snapshot = () => window.location.pathname + window.location.search;

/** The path below /dashboard/ ('' for the overview) and its query. */
export interface Route {
  path: string;
  query: URLSearchParams;
}

export function useRoute(): Route {
  const href = useSyncExternalStore(subscribe, snapshot);
  const url = new URL(href, window.location.origin);
  const path = url.pathname.startsWith(BASE) ? url.pathname.slice(BASE.length) : '';
  return { path: path.replace(/\/+$/, ''), query: url.searchParams };
}

export function href(to: string): string {
  return BASE + to.replace(/^\/+/, '');
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const target = href(to);
  if (target === snapshot()) return;
  if (options.replace) window.history.replaceState(null, '', target);
  else window.history.pushState(null, '', target);
  notify();
}

/** Params of `pattern` ('payments/:id') when it matches `path`, else null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const expected = pattern.split('/');
  const actual = path.split('/');
  if (expected.length !== actual.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < expected.length; i += 1) {
    if (expected[i].startsWith(':')) {
      if (!actual[i]) return null;
      params[expected[i].slice(1)] = decodeURIComponent(actual[i]);
    } else if (expected[i] !== actual[i]) return null;
  }
  return params;
}

/** Updates the query string of the current page (empty values removed), as a new history entry. */
export function setQuery(path: string, values: Record<string, string | undefined>, replace = false): void {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value) params.set(key, value);
  const text = params.toString();
  navigate(text ? `${path}?${text}` : path, { replace });
}

type LinkProps = Omit<AnchorHTMLAttributes<HTMLAnchorElement>, 'href'> & { to: string };

export function Link({ to, onClick, ...rest }: LinkProps) {
  function follow(event: MouseEvent<HTMLAnchorElement>) {
    onClick?.(event);
    if (event.defaultPrevented || event.button !== 0) return;
    if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  }
  return <a href={href(to)} onClick={follow} {...rest} />;
}
