// Loading data and running actions, with the loading, error and result states every page shows.
import { useCallback, useEffect, useRef, useState } from 'react';
import { api, errorText, type Query } from './api.ts';

export interface Resource<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/** GETs `path` (null: nothing yet) and again whenever the path or query changes or reload() is called. */
export function useApi<T>(path: string | null, query?: Query): Resource<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: path !== null,
  });
  const [generation, setGeneration] = useState(0);
  const key = path === null ? null : JSON.stringify([path, query ?? {}]);
  const queryRef = useRef(query);
  queryRef.current = query;

  // biome-ignore lint/correctness/useExhaustiveDependencies: `key` stands for path and query; generation is reload().
  useEffect(() => {
    if (path === null) return;
    const controller = new AbortController();
    setState((previous) => ({ ...previous, error: undefined, loading: true }));
    api.get<T>(path, queryRef.current, controller.signal).then(
      (data) => setState({ data, error: undefined, loading: false }),
      (error: unknown) => {
        if (controller.signal.aborted) return;
        setState((previous) => ({ data: previous.data, error, loading: false }));
      },
    );
    return () => controller.abort();
  }, [key, generation]);

  const reload = useCallback(() => setGeneration((n) => n + 1), []);
  return { ...state, reload };
}

export interface Action<A extends unknown[], R> {
  run: (...args: A) => Promise<R | undefined>;
  pending: boolean;
  error: string | null;
  clearError: () => void;
}

/** Wraps a mutation: `pending` while it runs, the server's `detail` in `error` when it fails. */
export function useAction<A extends unknown[], R>(perform: (...args: A) => Promise<R>): Action<A, R> {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const performRef = useRef(perform);
  performRef.current = perform;
  const mounted = useRef(true);
  useEffect(() => {
    mounted.current = true;
    return () => {
      mounted.current = false;
    };
  }, []);
  const run = useCallback(async (...args: A) => {
    setPending(true);
    setError(null);
    try {
      return await performRef.current(...args);
    } catch (caught) {
      if (mounted.current) setError(errorText(caught));
      return undefined;
    } finally {
      if (mounted.current) setPending(false);
    }
  }, []);
  const clearError = useCallback(() => setError(null), []);
  return { run, pending, error, clearError };
}

/** Sets the document title for the page. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Kassa`;
  }, [title]);
}
