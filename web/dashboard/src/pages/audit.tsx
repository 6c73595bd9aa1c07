// The audit log: who did what and from where, newest first, filtered by actor, action and dates, with a
// CSV export of the same selection.
import type { FormEvent } from 'react';
import { type Page, withQuery } from '../api.ts';
import { dateTime, dayBoundary } from '../format.ts';
import { useApi, useTitle } from '../hooks.ts';
import { setQuery } from '../router.tsx';
import { DataTable, Empty, PageHeader, Pagination, ResourceState } from '../ui.tsx';

interface Entry {
  id: number;
  at: string;
  actor: { type: string; id: number | null; email: string | null };
  action: string;
  target: { type: string; id: string } | null;
  ip: string | null;
  details: Record<string, unknown>;
}

const PAGE_SIZE = 50;

function actorText(actor: Entry['actor']): string {
  if (actor.email) return actor.email;
  if (actor.type === 'api_key') return `API key ${actor.id ?? ''}`;
  return actor.type === 'operator' ? 'Operator (CLI)' : 'System';
}

export function AuditPage({ query }: { query: URLSearchParams }) {
  useTitle('Audit log');
  const filters = {
    actor: query.get('actor') ?? '',
    action: query.get('action') ?? '',
    from: query.get('from') ?? '',
    to: query.get('to') ?? '',
  };
  const page = Number(query.get('page') ?? '1') || 1;
  const selection = {
    actor: filters.actor,
    action: filters.action,
    created_after: filters.from ? dayBoundary(filters.from, false) : undefined,
    created_before: filters.to ? dayBoundary(filters.to, true) : undefined,
  };
  const log = useApi<Page<Entry>>('/organization/audit-log/', { ...selection, page, page_size: PAGE_SIZE });

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const data = new FormData(event.currentTarget);
    setQuery('audit', {
      actor: String(data.get('actor') ?? '').trim(),
      action: String(data.get('action') ?? '').trim(),
      from: String(data.get('from') ?? ''),
      to: String(data.get('to') ?? ''),
    });
  }

  return (
    <>
      <PageHeader title="Audit log">
        <a
          className="button secondary"
          href={`/api${withQuery('/organization/audit-log/', { ...selection, format: 'csv' })}`}
          download
        >
          Export CSV
        </a>
      </PageHeader>
      <form className="filters" onSubmit={submit} aria-label="Filter the audit log">
        <label className="field">
          <span>Actor (email, api_key, operator, system)</span>
          <input name="actor" defaultValue={filters.actor} />
        </label>
        <label className="field">
          <span>Action (e.g. api_key or member.invited)</span>
          <input name="action" defaultValue={filters.action} />
        </label>
        <label className="field">
          <span>From</span>
          <input name="from" type="date" defaultValue={filters.from} />
        </label>
        <label className="field">
          <span>To</span>
          <input name="to" type="date" defaultValue={filters.to} />
        </label>
        <button type="submit" className="button secondary">
          Filter
        </button>
      </form>
      <ResourceState resource={log} what="the audit log" />
      {log.data ? (
        log.data.results.length === 0 ? (
          <Empty>No entries match.</Empty>
        ) : (
          <>
            <DataTable
              label="Audit log entries"
              columns={['When', 'Actor', 'Action', 'Target', 'Address', 'Details']}
            >
              {log.data.results.map((entry) => (
                <tr key={entry.id}>
                  <td>{dateTime(entry.at)}</td>
                  <td>{actorText(entry.actor)}</td>
                  <td className="mono">{entry.action}</td>
                  <td className="mono">{entry.target ? `${entry.target.type} ${entry.target.id}` : '—'}</td>
                  <td className="mono">{entry.ip ?? '—'}</td>
                  <td className="mono small">
                    {Object.keys(entry.details).length ? JSON.stringify(entry.details) : ''}
                  </td>
                </tr>
              ))}
            </DataTable>
            <Pagination
              page={page}
              pageSize={PAGE_SIZE}
              count={log.data.count}
              onPage={(next) => setQuery('audit', { ...filters, page: String(next) })}
            />
          </>
        )
      ) : null}
    </>
  );
}
