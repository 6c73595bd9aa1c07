// Django REST Framework style pages: {count, next, previous, results}, page from 1, page_size
// default 20 and at most 100, next/previous absolute URLs of the request with `page` replaced.
// Query parameters are checked by hand so a bad one is a 400 naming it; every list uses these.
import type { FastifyRequest } from 'fastify';
import { NotFoundError, ValidationError } from './errors.ts';

export type Query = Record<string, unknown>;

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;
export const MAX_SEARCH_LENGTH = 200;

/** The request's query string as parsed by Fastify (a repeated parameter is an array). */
export function queryOf(request: FastifyRequest): Query {
  return (request.query ?? {}) as Query;
}

/** A single string parameter, or undefined. Repeating a parameter is a 400. */
export function param(query: Query, name: string): string | undefined {
  const value = query[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new ValidationError(`${name}: must be given once.`);
  return value;
}

/** One of `allowed`, or undefined when absent or empty. */
export function choiceParam<T extends string>(
  query: Query,
  name: string,
  allowed: readonly T[],
): T | undefined {
  const value = param(query, name);
  if (value === undefined || value === '') return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ValidationError(`${name}: must be one of ${allowed.join(', ')}.`);
  }
  return value as T;
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
  /** Rows before this page: (page - 1) × pageSize. */
  offset: number;
}

export function pageRequest(query: Query): PageRequest {
  const page = positiveInt(query, 'page', 1);
  const pageSize = positiveInt(query, 'page_size', DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE);
  return { page, pageSize, offset: (page - 1) * pageSize };
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

/** `search`, trimmed; undefined when absent or blank. */
export function searchParam(query: Query): string | undefined {
  const search = param(query, 'search')?.trim();
  if (search !== undefined && search.length > MAX_SEARCH_LENGTH)
    throw new ValidationError(`search: must be at most ${MAX_SEARCH_LENGTH} characters.`);
  return search || undefined;
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
  return `${request.protocol}://${linkHost(request)}${url.pathname}${url.search}`;
}

const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The Host the client named, when it is a host name or address (with a port); otherwise the address the
 * client reached, so that a garbage Host header (`[`) still gives an absolute URL.
 */
function linkHost(request: FastifyRequest): string {
  if (HOST.test(request.host)) return request.host;
  const { localAddress, localPort } = request.socket;
  const address = localAddress?.includes(':') ? `[${localAddress}]` : (localAddress ?? 'localhost');
  return localPort ? `${address}:${localPort}` : address;
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
