// Django REST Framework style pages: {count, next, previous, results}, page from 1, page_size
// default 20 and at most 100. Query parameters are checked by hand so a bad one is a 400 naming it.
import type { FastifyRequest } from 'fastify';
import { NotFoundError, ValidationError } from '../../http/errors.ts';

export type Query = Record<string, unknown>;

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/** A single string parameter, or undefined. Repeating a parameter is a 400. */
export function param(query: Query, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new ValidationError(`${name}: must be given once.`);
  return value;
}

function positiveInt(query: Query, name: string, fallback: number, max?: number): number {
  const raw = param(query, name);
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1)
    throw new ValidationError(`${name}: must be a positive integer.`);
  const value = Number(raw);
  if (max !== undefined && value > max) throw new ValidationError(`${name}: must be at most ${max}.`);
  return value;
}

export interface PageRequest {
  page: number;
  pageSize: number;
}

export function pageRequest(query: Query): PageRequest {
  return {
    page: positiveInt(query, 'page', 1),
    pageSize: positiveInt(query, 'page_size', DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE),
  };
}

const ISO = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;

/** An ISO 8601 date-time parameter, normalised to the stored form (UTC, milliseconds). */
export function isoParam(query: Query, name: string): string | undefined {
  const raw = param(query, name);
  if (raw === undefined || raw === '') return undefined;
  const time = ISO.test(raw) ? Date.parse(raw.replace(' ', 'T')) : Number.NaN;
  if (Number.isNaN(time)) throw new ValidationError(`${name}: must be a valid ISO 8601 date-time.`);
  return new Date(time).toISOString();
}

/** `ordering`: one of the fields, optionally prefixed with '-'. */
export function orderingParam<T extends string>(
  query: Query,
  fields: readonly T[],
  fallback: `-${T}` | T,
): { field: T; direction: 'asc' | 'desc' } {
  const raw = param(query, 'ordering') || fallback;
  const field = raw.replace(/^-/, '');
  if (!(fields as readonly string[]).includes(field)) {
    throw new ValidationError(`ordering: must be one of ${fields.flatMap((f) => [f, `-${f}`]).join(', ')}.`);
  }
  return { field: field as T, direction: raw.startsWith('-') ? 'desc' : 'asc' };
}

function pageUrl(request: FastifyRequest, page: number | null): string {
  // Only the path and query are parsed: the Host header is the client's, and a malformed one (or a
  // path starting with //) must not break the page or move the link to another host.
  const url = new URL(request.url.replace(/^\/+/, '/'), 'http://host.invalid');
  if (page === null || page === 1) url.searchParams.delete('page');
  else url.searchParams.set('page', String(page));
  return `${request.protocol}://${request.host}${url.pathname}${url.search}`;
}

/** Wraps one page of results; a page past the end is DRF's 404 "Invalid page.". */
export function paginated<T>(request: FastifyRequest, pageRequest: PageRequest, count: number, results: T[]) {
  const pages = Math.max(1, Math.ceil(count / pageRequest.pageSize));
  if (pageRequest.page > pages) throw new NotFoundError('Invalid page.');
  return {
    count,
    next: pageRequest.page < pages ? pageUrl(request, pageRequest.page + 1) : null,
    previous: pageRequest.page > 1 ? pageUrl(request, pageRequest.page - 1) : null,
    results,
  };
}

/** A LIKE pattern matching `text` anywhere, with the wildcards in it escaped (ESCAPE '\'). */
export function containsPattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
