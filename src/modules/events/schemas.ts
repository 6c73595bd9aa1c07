// Query and response schemas of the events feed (GET /organization/events/).
import { Type } from 'typebox';
import { Environment, Nullable, Shape, Timestamp } from '../../http/schemas.ts';

export const EventsQuery = Type.Object({
  after: Type.Optional(Type.String({ pattern: '^\\d{1,15}$', description: 'Cursor: events after this id.' })),
  subject: Type.Optional(Type.String({ maxLength: 64 })),
  environment: Type.Optional(Environment),
  limit: Type.Optional(Type.String({ pattern: '^\\d{1,3}$', description: '1 to 500, default 100.' })),
  wait: Type.Optional(
    Type.String({ pattern: '^\\d{1,2}$', description: 'Long-poll up to this many seconds.' }),
  ),
});

/**
 * The answer's header naming the feed's hold-back (routes.ts FEED_SETTLE_MS): declared on the response
 * so that the OpenAPI document lists it (@fastify/swagger turns a response schema's `headers` into the
 * response's headers; serialisation ignores the keyword).
 */
export const FEED_SETTLE_HEADER = 'Kassa-Feed-Settle-Ms';

const EventFeedBody = Shape(
  {
    results: Type.Array(
      Shape({
        id: Type.Integer(),
        type: Type.Enum([
          'transaction.status_changed',
          'refund.status_changed',
          'payout.status_changed',
          'webhook.test',
        ]),
        environment: Environment,
        subject: Nullable(Type.String({ description: 'The payment, refund, payout or checkout id.' })),
        created_at: Timestamp,
        payload: Type.Record(Type.String(), Type.Unknown(), {
          description: 'The webhook body exactly as delivered.',
        }),
      }),
    ),
    cursor: Type.String({ description: 'Pass as `after` to read on.' }),
  },
  "The organization's events, oldest first.",
);

export const EventFeed = Object.assign(EventFeedBody, {
  headers: {
    [FEED_SETTLE_HEADER]: Type.Integer({
      minimum: 0,
      description:
        'Milliseconds an event is held back before the feed returns it: 2000 on PostgreSQL (so that events ' +
        'of transactions still committing are not skipped by a cursor), 0 on SQLite. A follower starting ' +
        'from "now" waits this long first.',
    }),
  },
});
