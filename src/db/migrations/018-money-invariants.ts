// The refund and reserve invariants, enforced by the database as the wallet's already are (its CHECK
// constraints refuse a balance below zero or an uncovered hold). The service checks each rule under the
// payment's row lock before it writes; these refuse the write if any code path, present or future, or an
// operator's SQL, ever gets one wrong (docs/wallet-refunds-payouts.md, "What the database refuses"):
//
// - a refund belongs to a payment of its own organization, environment and currency;
// - a payment's refunds that are not failed or rejected (pending, processing, completed) add up to at
//   most its gross: no refund beyond what was paid, whatever the order of their writes;
// - a payment's refunded amount stays between 0 and its gross;
// - a rolling-reserve row belongs to a payment, holds more than 0, and releases between 0 and what it
//   held, its release time and amount written together.
//
// PostgreSQL takes CHECK and FOREIGN KEY constraints on existing tables; SQLite cannot add a constraint
// to a table without rebuilding it, so there the same rules are BEFORE triggers that abort the
// statement. The refund sum is a trigger on both: a CHECK cannot read other rows. Two transactions
// cannot both add a live refund to one payment unseen by each other: on PostgreSQL the trigger locks the
// payment's row before it sums, so the second waits for the first's commit and then counts its refund;
// SQLite has one writer at a time.
import { type Kysely, type Migration, sql } from 'kysely';
import type { DatabaseKind } from '../../config.ts';

/** The refund statuses that count against the payment's gross. */
const LIVE = sql.raw(`('pending', 'processing', 'completed')`);

async function postgres(db: Kysely<unknown>) {
  await sql`alter table payments add constraint payments_refunded_amount
    check (refunded_amount >= 0 and refunded_amount <= gross)`.execute(db);
  await sql`alter table wallet_reserves add constraint wallet_reserves_amounts
    check (amount > 0 and (released_amount is null or (released_amount >= 0 and released_amount <= amount))
      and ((released_at is null) = (released_amount is null)))`.execute(db);
  await sql`alter table wallet_reserves add constraint wallet_reserves_payment
    foreign key (payment_id) references payments (id)`.execute(db);
  await sql`alter table refunds add constraint refunds_payment
    foreign key (payment_id) references payments (id)`.execute(db);
  await sql`
    create function kassa_refunds_within_payment() returns trigger language plpgsql as $$
    declare
      paid record;
      others bigint;
    begin
      -- The payment's row lock (the service holds it already: lock order payment, then wallet) makes
      -- every refund write of one payment wait for the one before to commit; the sum below, a statement
      -- of its own, is read after the wait, so it counts what that one wrote.
      select gross, organization_id, environment, currency into paid from payments where id = new.payment_id
        for update;
      if not found or paid.organization_id <> new.organization_id or paid.environment <> new.environment
         or paid.currency <> new.currency then
        raise exception 'refunds_payment: a refund belongs to a payment of its organization, environment and currency'
          using errcode = '23514';
      end if;
      if new.status in ${LIVE} then
        select coalesce(sum(amount), 0) into others from refunds
          where payment_id = new.payment_id and id <> new.id and status in ${LIVE};
        if others + new.amount > paid.gross then
          raise exception 'refunds_within_payment: the payment''s refunds would exceed its gross'
            using errcode = '23514';
        end if;
      end if;
      return new;
    end
    $$`.execute(db);
  await sql`
    create trigger refunds_within_payment before insert or update of amount, status, payment_id,
      organization_id, environment, currency on refunds
    for each row execute function kassa_refunds_within_payment()`.execute(db);
}

async function sqlite(db: Kysely<unknown>) {
  const abort = (name: string, message: string) => sql.raw(`select raise(abort, '${name}: ${message}')`);
  const refundPayment = abort(
    'refunds_payment',
    'a refund belongs to a payment of its organization, environment and currency',
  );
  const refundSum = abort('refunds_within_payment', 'the refunds of the payment would exceed its gross');
  const paymentMismatch = sql`not exists (select 1 from payments where payments.id = new.payment_id
    and payments.organization_id = new.organization_id and payments.environment = new.environment
    and payments.currency = new.currency)`;
  // `id is not new.id`: in a BEFORE INSERT trigger new.id may still be null.
  const overGross = sql`new.status in ${LIVE} and new.amount + coalesce((select sum(amount) from refunds
    where payment_id = new.payment_id and id is not new.id and status in ${LIVE}), 0)
    > (select gross from payments where payments.id = new.payment_id)`;
  for (const [name, event] of [
    ['insert', sql`before insert on refunds`],
    [
      'update',
      sql`before update of amount, status, payment_id, organization_id, environment, currency on refunds`,
    ],
  ] as const) {
    await sql`create trigger ${sql.raw(`refunds_payment_${name}`)} ${event}
      when ${paymentMismatch} begin ${refundPayment}; end`.execute(db);
    await sql`create trigger ${sql.raw(`refunds_within_payment_${name}`)} ${event}
      when ${overGross} begin ${refundSum}; end`.execute(db);
  }

  const refunded = abort('payments_refunded_amount', 'the refunded amount must be between 0 and the gross');
  const refundedOutside = sql`new.refunded_amount < 0 or new.refunded_amount > new.gross`;
  await sql`create trigger payments_refunded_amount_insert before insert on payments
    when ${refundedOutside} begin ${refunded}; end`.execute(db);
  await sql`create trigger payments_refunded_amount_update before update of refunded_amount, gross on payments
    when ${refundedOutside} begin ${refunded}; end`.execute(db);

  const reserve = abort(
    'wallet_reserves_amounts',
    'a reserve belongs to a payment, holds more than 0 and releases between 0 and what it held',
  );
  const reserveWrong = sql`new.amount <= 0
    or (new.released_amount is not null and (new.released_amount < 0 or new.released_amount > new.amount))
    or ((new.released_at is null) <> (new.released_amount is null))
    or not exists (select 1 from payments where payments.id = new.payment_id)`;
  await sql`create trigger wallet_reserves_amounts_insert before insert on wallet_reserves
    when ${reserveWrong} begin ${reserve}; end`.execute(db);
  await sql`create trigger wallet_reserves_amounts_update before update on wallet_reserves
    when ${reserveWrong} begin ${reserve}; end`.execute(db);
}

export function moneyInvariants(kind: DatabaseKind): Migration {
  return {
    async up(db: Kysely<unknown>) {
      if (kind === 'postgres') await postgres(db);
      else await sqlite(db);
    },
  };
}
