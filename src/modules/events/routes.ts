// GET /api/organization/events/: the organization's events as written to the outbox, oldest first
// after a cursor. With `wait`, it long-polls: `kassa listen` and the dashboard follow it live.
import type { AppContext } from '../../context.ts';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { ValidationError } from '../../http/errors.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import type { EventType } from './emit.ts';
import { EventFeed, EventsQuery } from './schemas.ts';

async function readEvents(
  ctx: AppContext,
  organizationId: number,
  filter: { after: number; subject?: string; environment?: string; limit: number },
) {
  let query = ctx.db
    .selectFrom('events')
    .select(['id', 'type', 'environment', 'subject', 'payload', 'created_at'])
    .where('organization_id', '=', organizationId)
    .where('id', '>', filter.after)
    .orderBy('id', 'asc')
    .limit(filter.limit);
  if (filter.subject) query = query.where('subject', '=', filter.subject);
  if (filter.environment)
    query = query.where('environment', '=', filter.environment as 'production' | 'sandbox');
  const rows = await query.execute();
  return rows.map((row) => ({
    id: row.id,
    // Only emitEvent writes events, always with one of these types.
    type: row.type as EventType,
    environment: row.environment,
    subject: row.subject,
    created_at: row.created_at,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
  }));
}

export async function eventRoutes(app: App, { ctx }: RouteOptions) {
  app.get(
    '/organization/events/',
    { preValidation: sessionAuth(ctx), schema: { querystring: EventsQuery, response: { 200: EventFeed } } },
    async (request) => {
      const organizationId = sessionOf(request).organizationId;
      const limit = Number(request.query.limit ?? 100);
      if (limit < 1 || limit > 500) throw new ValidationError('limit: must be between 1 and 500.');
      const waitMs = Math.min(Number(request.query.wait ?? 0), 30) * 1000;
      const filter = {
        after: Number(request.query.after ?? 0),
        subject: request.query.subject,
        environment: request.query.environment,
        limit,
      };
      const deadline = Date.now() + waitMs;
      let results = await readEvents(ctx, organizationId, filter);
      while (results.length === 0 && Date.now() < deadline && !request.raw.destroyed) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        results = await readEvents(ctx, organizationId, filter);
      }
      const last = results.at(-1);
      return { results, cursor: String(last ? last.id : filter.after) };
    },
  );
}
