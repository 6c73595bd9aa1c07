// GET /api/organization/audit-log/: newest first, in pages, filtered by actor (an email, an actor type, or
// api_key:<id>), action (exact, or a prefix such as "api_key" for every api_key.* action) and time; with
// format=csv, every matching entry (up to CSV_LIMIT) as a CSV file.
import type { FastifyRequest } from 'fastify';
import { sql } from 'kysely';
import type { Executor } from '../../db/database.ts';
import { ValidationError } from '../../http/errors.ts';
import { isoParam, pageRequest, paginated, param, queryOf } from '../../http/pagination.ts';
import type { AuditRow } from './table.ts';

const ACTOR_TYPES = ['user', 'api_key', 'operator', 'system'] as const;
export const CSV_LIMIT = 100_000;

export function presentEntry(row: AuditRow) {
  let details: Record<string, unknown> = {};
  try {
    details = JSON.parse(row.details) as Record<string, unknown>;
  } catch {
    details = {};
  }
  return {
    id: row.id,
    at: row.at,
    actor: { type: row.actor_type, id: row.actor_id, email: row.actor_email },
    action: row.action,
    target: row.target_type ? { type: row.target_type, id: row.target_id ?? '' } : null,
    ip: row.ip,
    user_agent: row.user_agent,
    details,
  };
}

function filtered(db: Executor, organizationId: number, request: FastifyRequest) {
  const query = queryOf(request);
  let scoped = db.selectFrom('audit_log').where('organization_id', '=', organizationId);
  const actor = param(query, 'actor')?.trim();
  if (actor) {
    const keyId = /^api_key:(\d{1,15})$/.exec(actor);
    if (keyId) scoped = scoped.where('actor_type', '=', 'api_key').where('actor_id', '=', Number(keyId[1]));
    else if ((ACTOR_TYPES as readonly string[]).includes(actor))
      scoped = scoped.where('actor_type', '=', actor as (typeof ACTOR_TYPES)[number]);
    else if (actor.includes('@')) scoped = scoped.where('actor_email', '=', actor.toLowerCase());
    else
      throw new ValidationError(
        `actor: must be an email, one of ${ACTOR_TYPES.join(', ')}, or api_key:<id>.`,
      );
  }
  const action = param(query, 'action')?.trim();
  if (action) {
    if (!/^[a-z_.]{1,100}$/.test(action))
      throw new ValidationError('action: must be an action name such as api_key.created.');
    const prefix = `${action}.`;
    scoped = scoped.where((eb) =>
      eb.or([
        eb('action', '=', action),
        eb(eb.fn<string>('substr', ['action', sql.lit(1), sql.val(prefix.length)]), '=', prefix),
      ]),
    );
  }
  const after = isoParam(query, 'created_after');
  if (after) scoped = scoped.where('at', '>=', after);
  const before = isoParam(query, 'created_before');
  if (before) scoped = scoped.where('at', '<', before);
  return scoped;
}

export async function listAuditLog(db: Executor, organizationId: number, request: FastifyRequest) {
  const page = pageRequest(queryOf(request));
  const scoped = filtered(db, organizationId, request);
  const counted = await scoped
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  const rows = await scoped
    .selectAll()
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.pageSize)
    .offset(page.offset)
    .execute();
  return paginated(request, page, Number(counted.count), rows.map(presentEntry));
}

const CSV_COLUMNS = [
  'id',
  'at',
  'actor_type',
  'actor_id',
  'actor_email',
  'action',
  'target_type',
  'target_id',
  'ip',
  'user_agent',
  'details',
] as const;

/** One CSV field: quoted when needed; a leading =, +, - or @ is defused so spreadsheets do not run it. */
function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export async function auditLogCsv(
  db: Executor,
  organizationId: number,
  request: FastifyRequest,
): Promise<string> {
  const rows = await filtered(db, organizationId, request)
    .selectAll()
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(CSV_LIMIT)
    .execute();
  const lines = [CSV_COLUMNS.join(',')];
  for (const row of rows) lines.push(CSV_COLUMNS.map((column) => csvField(row[column])).join(','));
  return `${lines.join('\r\n')}\r\n`;
}
