// GET /api/organization/events/: the organization's events as written to the outbox, oldest first
// after a cursor (the read and the cursor, which never skips an event, are in feed.ts). With `wait`, it
// long-polls: `kassa listen` and the dashboard follow it live. A session holds at most MAX_LONG_POLLS
// waiting polls at once (each costs a database read per interval), and the interval backs off from
// 250 ms to 1 s while nothing arrives.
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { RateLimitedError, ValidationError } from '../../http/errors.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { type FeedPage, parseCursor, readEvents } from './feed.ts';
import { EventFeed, EventsQuery, FEED_SETTLE_HEADER } from './schemas.ts';

/** Long-polls one session may hold at once (per process); a further one is a 429 at once. */
export const MAX_LONG_POLLS = 3;
const FIRST_POLL_MS = 250;
const LONGEST_POLL_MS = 1000;

export async function eventRoutes(app: App, { ctx }: RouteOptions) {
  const waitingBySession = new Map<number, number>();

  app.get(
    '/organization/events/',
    { preValidation: sessionAuth(ctx), schema: { querystring: EventsQuery, response: { 200: EventFeed } } },
    async (request, reply) => {
      // On the feed's answers only (an error's 429 or 400 does not declare it). Nothing is held back
      // (feed.ts): the header stays, at 0, for followers written against versions that held back 2 s.
      const answer = (page: FeedPage) => {
        void reply.header(FEED_SETTLE_HEADER, '0');
        return {
          results: page.events,
          cursor: page.cursor ?? request.query.after ?? '0',
        };
      };
      const organizationId = sessionOf(request).organizationId;
      const limit = Number(request.query.limit ?? 100);
      if (limit < 1 || limit > 500) throw new ValidationError('limit: must be between 1 and 500.');
      const waitMs = Math.min(Number(request.query.wait ?? 0), 30) * 1000;
      const filter = {
        after: parseCursor(request.query.after),
        subject: request.query.subject,
        environment: request.query.environment,
        limit,
      };
      const deadline = Date.now() + waitMs;
      let page = await readEvents(ctx, organizationId, filter);
      if (page.events.length > 0 || waitMs === 0) return answer(page);
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
        for (
          let pause = FIRST_POLL_MS;
          page.events.length === 0;
          pause = Math.min(pause * 2, LONGEST_POLL_MS)
        ) {
          const left = deadline - Date.now();
          if (left <= 0 || request.raw.destroyed) break;
          await new Promise((resolve) => setTimeout(resolve, Math.min(pause, left)));
          // Rows passed over (feed.ts) are not read again: the next read starts after them.
          const passed = page.cursor;
          if (passed) filter.after = parseCursor(passed);
          page = await readEvents(ctx, organizationId, filter);
          page.cursor ??= passed;
        }
      } finally {
        const left = (waitingBySession.get(sessionId) ?? 1) - 1;
        if (left > 0) waitingBySession.set(sessionId, left);
        else waitingBySession.delete(sessionId);
      }
      return answer(page);
    },
  );
}
