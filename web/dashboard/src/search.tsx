// Search everywhere: the header's box (press / or Ctrl+K to reach it from anywhere) opens the search
// page, which lists the payments and refunds of the environment shown that match.
import { type FormEvent, useEffect, useRef } from 'react';
import { dateTime, money } from './format.ts';
import { useApi, useTitle } from './hooks.ts';
import { Link, navigate } from './router.tsx';
import { useEnvironment } from './test-mode.tsx';
import type { SearchResult } from './types.ts';
import { DataTable, Empty, PageHeader, ResourceState, StatusBadge } from './ui.tsx';

/** Whether the key press happened while typing somewhere (then / is a character, not a shortcut). */
function typing(target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false;
  return target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName);
}

export function SearchBox({ query }: { query: string }) {
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    function onKey(event: KeyboardEvent) {
      const shortcut =
        ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === 'k') ||
        (event.key === '/' && !typing(event.target) && !event.ctrlKey && !event.metaKey && !event.altKey);
      if (!shortcut || document.querySelector('dialog[open]')) return;
      event.preventDefault();
      input.current?.focus();
      input.current?.select();
    }
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const text = String(new FormData(event.currentTarget).get('q') ?? '').trim();
    if (text) navigate(`search?q=${encodeURIComponent(text)}`);
  }

  return (
    <search className="search-box">
      <form onSubmit={submit} key={query}>
        <label className="visually-hidden" htmlFor="search-everywhere">
          Search payments and refunds
        </label>
        <input
          id="search-everywhere"
          ref={input}
          name="q"
          type="search"
          defaultValue={query}
          placeholder="Search…"
          aria-keyshortcuts="/ Control+K"
          autoComplete="off"
          maxLength={200}
        />
        <kbd className="search-key">/</kbd>
      </form>
    </search>
  );
}

const HINT =
  'Search by payment ID (TX…) or checkout ID (CO…), customer email, the last 4 digits of a card, refund ID (RF…) or refund reason.';

function ResultsTable({ results, label }: { results: SearchResult[]; label: string }) {
  return (
    <DataTable label={label} columns={['Result', 'Amount', 'Status', 'Created']} numeric={['Amount']}>
      {results.map((result) => (
        <tr key={`${result.type}-${result.id}`}>
          <td className="wrap">
            <Link to={`payments/${result.payment_id}`} className="mono">
              {result.id}
            </Link>
            {result.summary ? <span className="muted small block">{result.summary}</span> : null}
          </td>
          <td className="num">{money(result.amount, result.currency)}</td>
          <td>
            <StatusBadge status={result.status} />
          </td>
          <td>{dateTime(result.created_at)}</td>
        </tr>
      ))}
    </DataTable>
  );
}

export function SearchPage({ query }: { query: URLSearchParams }) {
  const text = (query.get('q') ?? '').trim();
  useTitle(text ? `Search: ${text}` : 'Search');
  const environment = useEnvironment();
  const found = useApi<{ results: SearchResult[] }>(text ? '/search/' : null, { q: text, environment });
  const results = found.data?.results ?? [];
  const payments = results.filter((result) => result.type === 'payment');
  const refunds = results.filter((result) => result.type === 'refund');
  return (
    <>
      <PageHeader title="Search" />
      <p className="muted">{HINT}</p>
      {text ? (
        <p>
          Results for <strong>“{text}”</strong> in {environment === 'sandbox' ? 'test mode' : 'production'}:
        </p>
      ) : (
        <Empty>Type in the search box at the top of the page (shortcut: /).</Empty>
      )}
      {text ? <ResourceState resource={found} what="the results" loading="Searching…" /> : null}
      {found.data && results.length === 0 ? <Empty>Nothing matches “{text}”.</Empty> : null}
      {payments.length > 0 ? (
        <section aria-labelledby="found-payments">
          <h2 id="found-payments">Payments</h2>
          <ResultsTable results={payments} label="Payments found" />
        </section>
      ) : null}
      {refunds.length > 0 ? (
        <section aria-labelledby="found-refunds">
          <h2 id="found-refunds">Refunds</h2>
          <ResultsTable results={refunds} label="Refunds found" />
        </section>
      ) : null}
    </>
  );
}
