// GET /api/organization/audit-log/ (JSON pages, or format=csv).
import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { choiceParam, queryOf } from '../../http/pagination.ts';
import { Nullable, Page, Shape, Timestamp } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { auditLogCsv, listAuditLog } from './list.ts';

const AuditEntry = Shape(
  {
    id: Type.Integer(),
    at: Timestamp,
    actor: Shape({
      type: Type.Union([
        Type.Literal('user'),
        Type.Literal('api_key'),
        Type.Literal('operator'),
        Type.Literal('system'),
      ]),
      id: Nullable(Type.Integer()),
      email: Nullable(Type.String()),
    }),
    action: Type.String({ examples: ['api_key.created'] }),
    target: Nullable(Shape({ type: Type.String(), id: Type.String() })),
    ip: Nullable(Type.String()),
    user_agent: Nullable(Type.String()),
    details: Type.Record(Type.String(), Type.Unknown()),
  },
  'One audit log entry.',
);

const AuditQuery = Type.Object({
  page: Type.Optional(Type.String()),
  page_size: Type.Optional(Type.String()),
  actor: Type.Optional(
    Type.String({
      description: 'An email, an actor type (user, api_key, operator, system) or api_key:<id>.',
    }),
  ),
  action: Type.Optional(
    Type.String({ description: 'An action, or a prefix: "api_key" matches every api_key.* action.' }),
  ),
  created_after: Type.Optional(Type.String({ description: 'ISO 8601; inclusive.' })),
  created_before: Type.Optional(Type.String({ description: 'ISO 8601; exclusive.' })),
  format: Type.Optional(
    Type.String({ description: 'csv: every matching entry (up to 100,000) as text/csv.' }),
  ),
});

export async function auditRoutes(app: App, { ctx }: RouteOptions) {
  app.get(
    '/organization/audit-log/',
    {
      preValidation: sessionAuth(ctx),
      schema: {
        querystring: AuditQuery,
        response: { 200: Page(AuditEntry, 'A page of audit log entries, newest first.') },
      },
    },
    async (request, reply) => {
      const organizationId = sessionOf(request).organizationId;
      if (choiceParam(queryOf(request), 'format', ['json', 'csv'] as const) === 'csv') {
        const csv = await auditLogCsv(ctx.db, organizationId, request);
        return reply
          .type('text/csv; charset=utf-8')
          .header('content-disposition', 'attachment; filename="audit-log.csv"')
          .send(csv as never);
      }
      return listAuditLog(ctx.db, organizationId, request);
    },
  );
}
