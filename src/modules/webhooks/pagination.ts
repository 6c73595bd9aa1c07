// Django REST Framework style pages: {count, next, previous, results}, `page` from 1, `page_size`
// default 20, at most 100.
import { NotFoundError, ValidationError } from '../../http/errors.ts';

export interface PageRequest {
  page: number;
  pageSize: number;
  limit: number;
  offset: number;
}

function positive(name: string, raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d{1,6}$/.test(raw) || Number(raw) < 1)
    throw new ValidationError(`${name}: must be a positive integer.`);
  if (Number(raw) > max) throw new ValidationError(`${name}: must be <= ${max}.`);
  return Number(raw);
}

export function parsePage(query: { page?: string; page_size?: string }): PageRequest {
  const page = positive('page', query.page, 1, 999_999);
  const pageSize = positive('page_size', query.page_size, 20, 100);
  return { page, pageSize, limit: pageSize, offset: (page - 1) * pageSize };
}

/** Builds the page body; a page past the last one is a 404, as in DRF. */
export function pageBody<T>(
  request: PageRequest,
  count: number,
  results: T[],
  link: { base: string; query: Record<string, string | undefined> },
) {
  if (request.page > 1 && request.offset >= count) throw new NotFoundError('Invalid page.');
  const url = (page: number) => {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(link.query)) if (value) params.set(name, value);
    params.set('page', String(page));
    return `${link.base}?${params.toString()}`;
  };
  return {
    count,
    next: request.offset + results.length < count ? url(request.page + 1) : null,
    previous: request.page > 1 ? url(request.page - 1) : null,
    results,
  };
}
