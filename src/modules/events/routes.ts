// GET /api/organization/events/: the organization's events as written to the outbox, oldest first
// after a cursor. With `wait`, it long-polls: `kassa listen` and the dashboard follow it live. A session
// holds at most MAX_LONG_POLLS waiting polls at once (each costs a database read per interval), and the
// interval backs off from 250 ms to 1 s while nothing arrives.
import type { AppContext } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { RateLimitedError, ValidationError } from '../../http/errors.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import type { EventType } from './emit.ts';
import { EventFeed, EventsQuery, FEED_SETTLE_HEADER } from './schemas.ts';

/**
 * On PostgreSQL, how old (by created_at) an event must be before the feed returns it. Ids come from a
 * sequence when the row is written, not when it commits: with T1 holding id 100 open while T2 commits
 * 101, a reader that returned 101 would move its cursor past 100 for good. Holding events back this
 * long lets such transactions commit first; one that commits later than this after writing its event
 * can still be skipped by a cursor (its webhook is unaffected: delivery reads the outbox, not the
 * feed). SQLite has one writer, so ids commit in order there and nothing is held back.
 */
export const FEED_SETTLE_MS = 2000;

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
  if (isPostgres(ctx.db)) {
    // created_at is the writer's clock as an ISO string (one format, so text order is time order).
    const settled = new Date(ctx.clock().getTime() - FEED_SETTLE_MS).toISOString();
    query = query.where('created_at', '<=', settled);
  }
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

/** Long-polls one session may hold at once (per process); a further one is a 429 at once. */
export const MAX_LONG_POLLS = 3;
const FIRST_POLL_MS = 250;
const LONGEST_POLL_MS = 1000;

function cursorOf(results: { id: number }[], after: number): string {
  const last = results.at(-1);
  return String(last ? last.id : after);
}

export async function eventRoutes(app: App, { ctx }: RouteOptions) {
  const waitingBySession = new Map<number, number>();

  app.get(
    '/organization/events/',
    { preValidation: sessionAuth(ctx), schema: { querystring: EventsQuery, response: { 200: EventFeed } } },
    async (request, reply) => {
      void reply.header(FEED_SETTLE_HEADER, String(isPostgres(ctx.db) ? FEED_SETTLE_MS : 0));
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
      if (results.length > 0 || waitMs === 0) return { results, cursor: cursorOf(results, filter.after) };
      const sessionId = sessionOf(request).sessionId;
      const waiting = waitingBySession.get(sessionId) ?? 0;
      if (waiting >= MAX_LONG_POLLS) {
        throw new RateLimitedError(
          `This session already has ${MAX_LONG_POLLS} long-polls waiting; wait for one to answer.`,
          Math.ceil(waitMs / 1000),
        );
      }
      waitingBySession.set(sessionId, waiting + 1);
      try {
        for (let pause = FIRST_POLL_MS; results.length === 0; pause = Math.min(pause * 2, LONGEST_POLL_MS)) {
          const left = deadline - Date.now();
          if (left <= 0 || request.raw.destroyed) break;
          await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)));
          results = await readEvents(ctx, organizationId, filter);
        }
      } finally {
        const left = (waitingBySession.get(sessionId) ?? 1) - 1;
        if (left > 0) waitingBySession.set(sessionId, left);
        else waitingBySession.delete(sessionId);
      }
      return { results, cursor: cursorOf(results, filter.after) };
    },
  );
}
