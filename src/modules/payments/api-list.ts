// GET /transactions/ for API keys (payments:read): the organization's payments of the key's
// environment, newest first, in pages ({count, next, previous, results} of the API's Payment object).
// Filters: status, order_id (the checkout id), client_reference_id, created_after, created_before.
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import { ValidationError } from '../../http/errors.ts';
import {
  choiceParam,
  isoParam,
  pageRequest,
  paginated,
  param,
  type Query,
  queryOf,
} from '../../http/pagination.ts';
import { isPublicId } from '../../lib/ids.ts';
import type { Environment } from '../api-keys/table.ts';
import { presentPayment } from './present.ts';
import * as store from './store.ts';
import { PAYMENT_STATUSES } from './table.ts';

function textParam(query: Query, name: string, maxLength: number): string | undefined {
  const value = param(query, name);
  if (value === undefined || value === '') return undefined;
  if (value.length > maxLength)
    throw new ValidationError(`${name}: must be at most ${maxLength} characters.`);
  return value;
}

/** The filters and page of the query string; a bad parameter is a 400 naming it. */
function parseApiListQuery(query: Query) {
  const orderId = textParam(query, 'order_id', 64);
  if (orderId !== undefined && !isPublicId('checkout', orderId)) {
    throw new ValidationError('order_id: must be a checkout id (CO followed by 20 letters or digits).');
  }
  return {
    status: choiceParam(query, 'status', PAYMENT_STATUSES),
    orderId,
    clientReferenceId: textParam(query, 'client_reference_id', 200),
    createdAfter: isoParam(query, 'created_after'),
    createdBefore: isoParam(query, 'created_before'),
    page: pageRequest(query),
  };
}

export async function listPaymentsForKey(
  ctx: AppContext,
  organizationId: number,
  environment: Environment,
  request: FastifyRequest,
) {
  const q = parseApiListQuery(queryOf(request));
  let base = ctx.db
    .selectFrom('payments')
    .innerJoin('checkout_sessions', 'checkout_sessions.id', 'payments.checkout_session_id')
    .where('payments.organization_id', '=', organizationId)
    .where('payments.environment', '=', environment);
  if (q.status) base = base.where('payments.status', '=', q.status);
  if (q.orderId) base = base.where('checkout_sessions.public_id', '=', q.orderId);
  if (q.clientReferenceId) {
    base = base
      .where('checkout_sessions.organization_id', '=', organizationId)
      .where('checkout_sessions.client_reference_id', '=', q.clientReferenceId);
  }
  if (q.createdAfter) base = base.where('payments.created_at', '>', q.createdAfter);
  if (q.createdBefore) base = base.where('payments.created_at', '<', q.createdBefore);
  const { count } = await base.select((eb) => eb.fn.countAll<number>().as('count')).executeTakeFirstOrThrow();
  const rows = await base
    .selectAll('payments')
    .select([
      'checkout_sessions.public_id as checkout_public_id',
      'checkout_sessions.metadata',
      'checkout_sessions.client_reference_id',
      'checkout_sessions.subscription_public_id',
    ])
    .orderBy('payments.created_at', 'desc')
    .orderBy('payments.id', 'desc')
    .limit(q.page.pageSize)
    .offset(q.page.offset)
    .execute();
  // Throws DRF's 404 past the last page, before the attempts are read.
  const page = paginated(request, q.page, Number(count), rows);
  const attempts = await store.attemptsByPayment(
    ctx.db,
    rows.map((row) => row.id),
  );
  return {
    ...page,
    results: rows.map(
      ({ checkout_public_id, metadata, client_reference_id, subscription_public_id, ...payment }) =>
        presentPayment(payment, attempts.get(payment.id) ?? [], {
          public_id: checkout_public_id,
          metadata,
          client_reference_id,
          subscription_public_id,
        }),
    ),
  };
}
