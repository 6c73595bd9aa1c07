// GET /payment-links/{id}/payments/: the payments whose checkout started from the link, newest first,
// in the dashboard's payment shape (GET /transactions/{id}/ plus checkout_id, environment, refunded_amount).
import type { AppContext } from '../../context.ts';
import { NotFoundError } from '../../http/errors.ts';
import { presentDashboardPayment } from '../payments/present.ts';
import { attemptsByPayment, checkoutReferences } from '../payments/store.ts';
import { parseLinkId } from './service.ts';
import * as store from './store.ts';

export async function listLinkPayments(ctx: AppContext, organizationId: number, id: string) {
  const link = await store.findLink(ctx.db, organizationId, parseLinkId(id));
  if (!link) throw new NotFoundError('Payment link not found.');
  const rows = await store.paymentsOfLink(ctx.db, organizationId, link.uuid);
  const [attempts, checkouts] = await Promise.all([
    attemptsByPayment(
      ctx.db,
      rows.map((row) => row.id),
    ),
    checkoutReferences(
      ctx.db,
      rows.map((row) => row.checkout_session_id),
    ),
  ]);
  return rows.map((row) =>
    presentDashboardPayment(row, attempts.get(row.id) ?? [], checkouts.get(row.checkout_session_id)),
  );
}
