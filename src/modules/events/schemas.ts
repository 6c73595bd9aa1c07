// Query and response schemas of the events feed (GET /organization/events/).
import { Type } from 'typebox';
import { Environment, Nullable, Shape, Timestamp } from '../../http/schemas.ts';

export const EventsQuery = Type.Object({
  after: Type.Optional(
    Type.String({
      pattern: '^(\\d{1,19}-)?\\d{1,15}$',
      description:
        'Cursor: the `cursor` of an earlier answer, as it was (`<id>` on SQLite, `<tx>-<id>` on PostgreSQL, ' +
        'where a plain `<id>` from an earlier version is still accepted); `0` or none reads from the start.',
    }),
  ),
  subject: Type.Optional(Type.String({ maxLength: 64 })),
  environment: Type.Optional(Environment),
  limit: Type.Optional(Type.String({ pattern: '^\\d{1,3}$', description: '1 to 500, default 100.' })),
  wait: Type.Optional(
    Type.String({ pattern: '^\\d{1,2}$', description: 'Long-poll up to this many seconds.' }),
  ),
});

/**
 * The answer's header naming the feed's hold-back, 0 since the feed is ordered by commit (feed.ts); versions
 * before it held events back 2 s on PostgreSQL, and followers wait the header out. Declared on the response
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
    cursor: Type.String({
      description: 'Pass as `after` to read on: opaque (`<id>` on SQLite, `<tx>-<id>` on PostgreSQL).',
    }),
  },
  "The organization's events, oldest first.",
);

export const EventFeed = Object.assign(EventFeedBody, {
  headers: {
    [FEED_SETTLE_HEADER]: Type.Integer({
      minimum: 0,
      description:
        'Milliseconds an event is held back before the feed returns it: 0 on both databases (an event is ' +
        'returned once no transaction that could commit an event before it is still open, so a cursor ' +
        'never skips one). Earlier versions answered 2000 on PostgreSQL; a follower starting from "now" ' +
        'waits this long first.',
    }),
  },
});
