// The filtered, paged list pages: the filters live in the URL's query, the filter bar shows them,
// Apply puts the submitted fields back into the URL, and the page links keep them.
import type { FormEvent, ReactNode } from 'react';
import { asPage, type Page, type Query } from './api.ts';
import { dayBoundary, displayTimeZone } from './format.ts';
import type { Resource } from './hooks.ts';
import { setQuery } from './router.tsx';
import { type Choice, Empty, Pagination, ResourceState, SelectField } from './ui.tsx';

/** The page number in `query` (1 when absent or invalid). */
function pageNumber(query: URLSearchParams): number {
  const value = Number(query.get('page'));
  return Number.isInteger(value) && value > 0 ? value : 1;
}

/** A filtered list's state, read from the URL's query by listFilters. */
export interface ListFilters<Name extends string = string> {
  /** The list's path in the dashboard ('payments'). */
  path: string;
  names: readonly Name[];
  /** Each filter's value, '' when it is not set. */
  filters: Record<Name, string>;
  /** Whether any filter is set. */
  filtered: boolean;
  page: number;
}

/**
 * The filters in `names` from the URL's query of the list at `path`; `ignored` (such as the page
 * size or the order) does not make the list `filtered`.
 */
export function listFilters<Name extends string>(
  path: string,
  query: URLSearchParams,
  names: readonly Name[],
  ignored?: Name,
): ListFilters<Name> {
  const entries = names.map((name) => [name, query.get(name) ?? '']);
  const filters = Object.fromEntries(entries) as Record<Name, string>;
  const filtered = names.some((name) => name !== ignored && filters[name] !== '');
  return { path, names, filters, filtered, page: pageNumber(query) };
}

/** The list API's query: the page and its size, the filters, and the From and To days as created_at bounds. */
export function listQuery({ filters, page }: ListFilters, pageSize: number): Query {
  const { from = '', to = '', page_size: _pageSize, ...others } = filters;
  return {
    page,
    page_size: pageSize,
    ...others,
    created_at__gte: dayBoundary(from, false),
    created_at__lte: dayBoundary(to, true),
  };
}

/**
 * A list's filter form: Apply writes its fields (trimmed) to the URL's query; Clear (unless not
 * `clearable`), shown while the list is filtered, empties it; `actions` follow. Give it a `key` that
 * changes with the applied filters, so that its fields show them again.
 */
export function FilterBar({
  list,
  label,
  clearable = true,
  actions,
  children,
}: {
  list: ListFilters;
  label: string;
  clearable?: boolean;
  actions?: ReactNode;
  children: ReactNode;
}) {
  function apply(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const values: Record<string, string> = {};
    for (const name of list.names) values[name] = String(form.get(name) ?? '').trim();
    setQuery(list.path, values);
  }
  return (
    <form className="filters" onSubmit={apply} aria-label={label}>
      {children}
      <div className="filter-actions">
        <button type="submit" className="button">
          Apply
        </button>
        {clearable && list.filtered ? (
          <button type="button" className="button secondary" onClick={() => setQuery(list.path, {})}>
            Clear
          </button>
        ) : null}
        {actions}
      </div>
    </form>
  );
}

export function SearchField({ value, placeholder }: { value: string; placeholder: string }) {
  return (
    <label className="field grow">
      <span>Search</span>
      <input name="search" type="search" defaultValue={value} placeholder={placeholder} />
    </label>
  );
}

/** A status select: "Any", then each status (as `label` shows it). */
export function StatusFilter({
  value,
  statuses,
  label = (status) => status,
}: {
  value: string;
  statuses: readonly string[];
  label?: (status: string) => string;
}) {
  const choices = statuses.map((status): Choice => [status, label(status)]);
  return <SelectField label="Status" name="status" value={value} choices={choices} any />;
}

/** The From and To day inputs (`from`, `to`): whole days in the organization's time zone. */
export function DateRangeFilter({ from, to }: { from: string; to: string }) {
  const zone = displayTimeZone();
  return (
    <>
      <label className="field">
        <span>From</span>
        <input name="from" type="date" defaultValue={from} aria-describedby="days-zone" />
      </label>
      <label className="field">
        <span>To</span>
        <input name="to" type="date" defaultValue={to} aria-describedby="days-zone" />
      </label>
      <span id="days-zone" className="visually-hidden">
        Days in {zone}
      </span>
    </>
  );
}

const PAGE_SIZES = ['20', '50', '100'];

export function PageSizeFilter({ value }: { value: number }) {
  return <SelectField label="Per page" name="page_size" value={String(value)} choices={PAGE_SIZES} />;
}

/**
 * A list's load state and results: the error or loading line, `empty` when there are no results,
 * else the results (drawn by `children`) and the page links, which keep the filters.
 */
export function PagedList<T>({
  list,
  resource,
  what,
  pageSize,
  empty,
  children,
}: {
  list: ListFilters;
  resource: Resource<Page<T> | T[]>;
  what: string;
  pageSize: number;
  empty: ReactNode;
  children: (results: T[]) => ReactNode;
}) {
  const data = asPage(resource.data);
  return (
    <>
      <ResourceState resource={resource} what={what} />
      {data && data.results.length === 0 ? <Empty>{empty}</Empty> : null}
      {data && data.results.length > 0 ? (
        <div aria-busy={resource.loading}>
          {children(data.results)}
          <Pagination
            page={list.page}
            pageSize={pageSize}
            count={data.count}
            onPage={(next) => setQuery(list.path, { ...list.filters, page: String(next) })}
          />
        </div>
      ) : null}
    </>
  );
}
