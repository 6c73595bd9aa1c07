// Payouts: the merchant asks for money out of the wallet balance (held until the operator acts);
// the operator completes (the wallet is debited) or rejects (the hold is released).

import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { ConflictError, NotFoundError, ValidationError } from '../../http/errors.ts';
import { pageRequest, paginated, queryOf } from '../../http/pagination.ts';
import { isPublicId, newPublicId, parseNumericId } from '../../lib/ids.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import type { Environment } from '../api-keys/table.ts';
import { type Actor, OPERATOR, recordAudit } from '../audit/record.ts';
import { emitEvent } from '../events/emit.ts';
import { debitHold, type HoldSubject, placeHold, releaseHold } from '../wallet/holds.ts';
import { lockWallet } from '../wallet/ledger.ts';
import { destinationLabel, findCurrentDestination } from './destinations.ts';
import type { PayoutDestinationRow, PayoutRow } from './table.ts';

type Deps = Pick<AppContext, 'db' | 'clock'>;

export function presentPayout(row: PayoutRow, destination: PayoutDestinationRow | undefined) {
  return {
    id: row.public_id,
    amount: formatAmount(toBigInt(row.amount)),
    currency: row.currency,
    status: row.status,
    environment: row.environment,
    destination: destination
      ? {
          id: destination.public_id,
          type: destination.type,
          account_holder: destination.account_holder,
          label: destinationLabel(destination),
        }
      : null,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

/** The accounts of these payouts, by destination id. */
export async function destinationsOf(db: Executor, rows: PayoutRow[]) {
  const ids = [...new Set(rows.map((row) => row.destination_id).filter((id) => id !== null))];
  const found = ids.length
    ? await db.selectFrom('payout_destinations').selectAll().where('id', 'in', ids).execute()
    : [];
  return new Map(found.map((destination) => [destination.id, destination]));
}

async function presentPayouts(db: Executor, rows: PayoutRow[]) {
  const destinations = await destinationsOf(db, rows);
  return rows.map((row) => presentPayout(row, destinations.get(row.destination_id ?? 0)));
}

function holdOf(row: PayoutRow): HoldSubject {
  return { kind: 'payout', id: row.id, publicId: row.public_id, amount: toBigInt(row.amount) };
}

/** POST /api/payouts/: at most balance − held; the amount is held at once. */
export async function createPayout(
  deps: Deps,
  organizationId: number,
  environment: Environment,
  amount: bigint,
  actor: Actor,
) {
  const now = deps.clock().toISOString();
  return deps.db.transaction().execute(async (trx) => {
    const wallet = await lockWallet(trx, organizationId, environment, now);
    const payable = wallet.balance - wallet.held;
    if (amount > payable) {
      throw new ValidationError(
        `amount: exceeds the balance available for payout (${formatAmount(payable > 0n ? payable : 0n)} USD).`,
      );
    }
    const destination = await findCurrentDestination(trx, organizationId, environment);
    const row = await trx
      .insertInto('payouts')
      .values({
        public_id: newPublicId('payout'),
        organization_id: organizationId,
        environment,
        amount: Number(amount),
        currency: 'USD',
        status: 'pending',
        destination_id: destination?.id ?? null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'payout.requested',
        target: { type: 'payout', id: row.public_id },
        details: { amount: formatAmount(amount), environment },
      },
      now,
    );
    await placeHold(trx, wallet, holdOf(row), now);
    return presentPayout(row, destination);
  });
}

export async function listPayouts(
  db: Executor,
  organizationId: number,
  environment: Environment,
  request: FastifyRequest,
) {
  const page = pageRequest(queryOf(request));
  const scoped = db
    .selectFrom('payouts')
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment);
  const counted = await scoped
    .select((eb) => eb.fn.countAll<number | string>().as('count'))
    .executeTakeFirstOrThrow();
  const rows = await scoped
    .selectAll()
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(page.pageSize)
    .offset(page.offset)
    .execute();
  return paginated(request, page, Number(counted.count), await presentPayouts(db, rows));
}

function findPayout(db: Executor, reference: string) {
  const numeric = parseNumericId(reference);
  if (numeric === null && !isPublicId('payout', reference)) return Promise.resolve(undefined);
  const query = db.selectFrom('payouts').selectAll();
  return (
    numeric === null ? query.where('public_id', '=', reference) : query.where('id', '=', numeric)
  ).executeTakeFirst();
}

/** Operator action: pending → completed (debit) or rejected (release), with payout.status_changed. */
export async function settlePayout(
  deps: Deps,
  reference: string,
  outcome: 'completed' | 'rejected',
  actor: Actor = OPERATOR,
) {
  const now = deps.clock().toISOString();
  return deps.db.transaction().execute(async (trx) => {
    const found = await findPayout(trx, reference);
    if (!found) throw new NotFoundError(`Payout ${reference} not found.`);
    const wallet = await lockWallet(trx, found.organization_id, found.environment, now);
    const moved = await trx
      .updateTable('payouts')
      .set({ status: outcome, updated_at: now })
      .where('id', '=', found.id)
      .where('status', '=', 'pending')
      .returningAll()
      .executeTakeFirst();
    if (!moved) {
      const current = await findPayout(trx, reference);
      throw new ConflictError(`Payout ${found.public_id} is already ${current?.status ?? found.status}.`);
    }
    if (outcome === 'completed') await debitHold(trx, wallet, holdOf(moved), now);
    else await releaseHold(trx, wallet, holdOf(moved), now);
    await recordAudit(
      trx,
      moved.organization_id,
      actor,
      {
        action: `payout.${outcome}`,
        target: { type: 'payout', id: moved.public_id },
        details: { amount: formatAmount(toBigInt(moved.amount)), environment: moved.environment },
      },
      now,
    );
    await emitEvent(trx, {
      organizationId: moved.organization_id,
      environment: moved.environment,
      type: 'payout.status_changed',
      subject: moved.public_id,
      payload: {
        payout_id: moved.public_id,
        amount: formatAmount(toBigInt(moved.amount)),
        status: moved.status,
        currency: 'USD',
        created_at: moved.created_at,
        updated_at: moved.updated_at,
      },
      now,
    });
    const [presented] = await presentPayouts(trx, [moved]);
    return presented;
  });
}
