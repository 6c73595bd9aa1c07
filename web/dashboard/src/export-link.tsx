// "Export CSV": a plain download link to GET /api/exports/{what}/ with the list's filters and the
// environment shown. The browser sends the session cookie; the server streams the file.
import { type Query, withQuery } from './api.ts';
import { useEnvironment } from './test-mode.tsx';

export function ExportLink({ what, query = {}, label }: { what: string; query?: Query; label: string }) {
  const environment = useEnvironment();
  const { page: _page, page_size: _size, ordering: _ordering, ...filters } = query;
  const href = withQuery(`/api/exports/${what}/`, { ...filters, environment });
  return (
    <a className="button secondary" href={href} download>
      Export CSV<span className="visually-hidden"> of {label}</span>
    </a>
  );
}
