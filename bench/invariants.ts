// The invariants of a Kassa database at rest, checked from the outside after a load or crash run
// (bench/scale-out.ts, test/crash-matrix.test.ts). Every check reads the tables directly and recomputes
// what they must agree on; none trusts the service's own bookkeeping. Call it once the system is
// quiescent (outbox drained, no refund in flight), except where a check says it holds at any moment.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '../src/db/database.ts';
import type { Environment } from '../src/modules/api-keys/table.ts';
import { auditWallet } from '../src/modules/wallet/service.ts';
import { simulatorDb } from '../src/provider/simulator/store.ts';

/** One webhook request as a receiver saw it. */
export interface ReceivedDelivery {
  deliveryId: string;
  /** SHA-256 (hex) of the raw body bytes. */
  bodySha256: string;
  signatureValid: boolean;
}

export interface InvariantResult {
  name: string;
  /** How many rows the check looked at. */
  checked: number;
  /** Empty when the invariant holds; otherwise the first problems found (see `problemCount`). */
  problems: string[];
  problemCount: number;
}

export interface InvariantOptions {
  /** What the receiver got; without it the signature check is skipped. */
  received?: Iterable<ReceivedDelivery>;
}

const MAX_LISTED = 10;
const PAID_FAMILY = new Set(['paid', 'refund_pending', 'refunded']);

/** The `sha256=<hex>` signature a receiver expects, computed independently of the service. */
export function expectedSignature(secret: string, body: Buffer | string): string {
  return `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex')}`;
}

export function signatureMatches(secret: string, body: Buffer | string, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(expectedSignature(secret, body));
  const given = Buffer.from(header.trim().toLowerCase());
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export function sha256Hex(body: Buffer | string): string {
  return createHash('sha256').update(body).digest('hex');
}

class Check {
  readonly problems: string[] = [];
  problemCount = 0;
  checked = 0;
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  fail(problem: string) {
    this.problemCount += 1;
    if (this.problems.length < MAX_LISTED) this.problems.push(problem);
  }
  result(): InvariantResult {
    return {
      name: this.name,
      checked: this.checked,
      problems: this.problems,
      problemCount: this.problemCount,
    };
  }
}

/** Counts of ledger movements by kind and reference: kind → reference id → count. */
async function movementCounts(db: Kysely<Database>) {
  const rows = await db
    .selectFrom('wallet_movements')
    .select(['kind', 'reference_id'])
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .groupBy(['kind', 'reference_id'])
    .execute();
  const counts = new Map<string, Map<number, number>>();
  for (const row of rows) {
    const byReference = counts.get(row.kind) ?? new Map<number, number>();
    byReference.set(Number(row.reference_id), Number(row.count));
    counts.set(row.kind, byReference);
  }
  return (kind: string, referenceId: number) => counts.get(kind)?.get(referenceId) ?? 0;
}

async function checkWallets(db: Kysely<Database>): Promise<InvariantResult> {
  const check = new Check('wallet buckets = sum of ledger entries, none negative');
  const wallets = await db.selectFrom('wallets').select(['organization_id', 'environment']).execute();
  for (const wallet of wallets) {
    check.checked += 1;
    const audit = await auditWallet(db, wallet.organization_id, wallet.environment as Environment);
    for (const problem of audit.problems)
      check.fail(`wallet of org ${wallet.organization_id} (${wallet.environment}): ${problem}`);
  }
  return check.result();
}

async function checkSettlements(
  db: Kysely<Database>,
  count: (kind: string, id: number) => number,
): Promise<InvariantResult> {
  const check = new Check('one settlement per settled payment, none for the others');
  const payments = await db
    .selectFrom('payments')
    .select(['id', 'public_id', 'status', 'deposit_status', 'settled_at'])
    .execute();
  for (const payment of payments) {
    check.checked += 1;
    const settlements = count('settlement', payment.id);
    const due = PAID_FAMILY.has(payment.status) && payment.deposit_status === 'succeeded' ? 1 : 0;
    if (settlements !== due)
      check.fail(`${payment.public_id} (${payment.status}) has ${settlements} settlements, expected ${due}`);
    if ((payment.settled_at !== null) !== settlements > 0)
      check.fail(`${payment.public_id}: settled_at ${payment.settled_at} but ${settlements} settlements`);
  }
  return check.result();
}

async function checkRefundLedger(
  db: Kysely<Database>,
  count: (kind: string, id: number) => number,
): Promise<InvariantResult[]> {
  const ledger = new Check('one hold per refund; one debit per completed refund, one release per failed one');
  const refunded = new Check("each payment's refunded amount = sum of its completed refunds");
  const refunds = await db
    .selectFrom('refunds')
    .select(['id', 'public_id', 'payment_id', 'status', 'amount'])
    .execute();
  const completedByPayment = new Map<number, bigint>();
  for (const refund of refunds) {
    ledger.checked += 1;
    const holds = count('refund_hold', refund.id);
    const debits = count('refund_debit', refund.id);
    const releases = count('refund_release', refund.id);
    // An operator's settlement of a provider conflict corrects a finished refund, at most once each way: a
    // late debit (failed → completed, its hold already released) or a reversal (completed → failed). The
    // hold is still closed once, and what left the wallet for the refund, net, is one debit exactly when
    // it is completed.
    const late = count('refund_late_debit', refund.id);
    const reversals = count('refund_reversal', refund.id);
    const finished = refund.status === 'completed' || refund.status === 'failed' ? 1 : 0;
    const paidOut = refund.status === 'completed' ? 1 : 0;
    if (holds !== 1 || debits + releases !== finished || debits + late - reversals !== paidOut) {
      ledger.fail(
        `${refund.public_id} (${refund.status}): ${holds} holds, ${debits} debits, ${releases} releases${
          late + reversals > 0 ? `, ${late} late debits, ${reversals} reversals` : ''
        }`,
      );
    }
    if (refund.status === 'completed')
      completedByPayment.set(
        refund.payment_id,
        (completedByPayment.get(refund.payment_id) ?? 0n) + BigInt(refund.amount),
      );
  }
  const payments = await db
    .selectFrom('payments')
    .select(['id', 'public_id', 'gross', 'refunded_amount', 'status'])
    .execute();
  for (const payment of payments) {
    refunded.checked += 1;
    const completed = completedByPayment.get(payment.id) ?? 0n;
    if (BigInt(payment.refunded_amount) !== completed)
      refunded.fail(
        `${payment.public_id}: refunded_amount ${payment.refunded_amount}, completed ${completed}`,
      );
    if (completed > BigInt(payment.gross))
      refunded.fail(`${payment.public_id}: refunded more than its gross`);
    if (payment.status === 'refunded' && completed !== BigInt(payment.gross))
      refunded.fail(`${payment.public_id} is refunded but only ${completed} of ${payment.gross} was`);
  }
  return [ledger.result(), await checkRefundsInFlight(db), refunded.result()];
}

/**
 * At most one pending or processing refund per payment. Holds at any moment, not only at rest, so the
 * crash matrix also checks it between kills (at rest there is nothing in flight to count). `checked`
 * is the number of payments that had a refund in flight.
 */
export async function checkRefundsInFlight(db: Kysely<Database>): Promise<InvariantResult> {
  const check = new Check('at most one in-flight refund per payment');
  const rows = await db
    .selectFrom('refunds')
    .select((eb) => ['payment_id', eb.fn.countAll<number | string>().as('n')])
    .where('status', 'in', ['pending', 'processing'])
    .groupBy('payment_id')
    .execute();
  for (const row of rows) {
    check.checked += 1;
    if (Number(row.n) > 1) check.fail(`payment ${row.payment_id} has ${row.n} refunds in flight`);
  }
  return check.result();
}

/** What the simulated processor did and what Kassa recorded must agree (nothing charged is lost). */
async function checkProviderAgreement(db: Kysely<Database>): Promise<InvariantResult> {
  const check = new Check('the provider and Kassa agree on every payment and refund');
  const sim = simulatorDb(db);
  const simPayments = new Map(
    (await sim.selectFrom('sim_payments').select(['reference', 'outcome']).execute()).map((row) => [
      row.reference,
      row.outcome,
    ]),
  );
  const payments = await db.selectFrom('payments').select(['public_id', 'status']).execute();
  const known = new Set<string>();
  for (const payment of payments) {
    check.checked += 1;
    known.add(payment.public_id);
    const outcome = simPayments.get(payment.public_id);
    if ((outcome === 'PAYMENT_SUCCESS') !== PAID_FAMILY.has(payment.status))
      check.fail(`${payment.public_id}: provider says ${outcome ?? 'nothing'}, Kassa says ${payment.status}`);
  }
  for (const reference of simPayments.keys())
    if (!known.has(reference)) check.fail(`provider payment ${reference} has no Kassa payment`);
  const simRefunds = new Map(
    (await sim.selectFrom('sim_refunds').select(['reference', 'status']).execute()).map((row) => [
      row.reference,
      row.status,
    ]),
  );
  for (const refund of await db.selectFrom('refunds').select(['public_id', 'status']).execute()) {
    check.checked += 1;
    const simStatus = simRefunds.get(refund.public_id);
    const agrees =
      simStatus === undefined
        ? refund.status === 'failed' || refund.status === 'rejected'
        : simStatus === refund.status;
    if (!agrees)
      check.fail(`${refund.public_id}: provider says ${simStatus ?? 'nothing'}, Kassa ${refund.status}`);
  }
  return check.result();
}

async function checkEvents(db: Kysely<Database>, options: InvariantOptions): Promise<InvariantResult[]> {
  const dispatched = new Check('every committed event dispatched, with a delivery when an endpoint was set');
  const delivered = new Check('every committed event received with a valid signature and its exact body');
  const endpoints = new Map(
    (await db.selectFrom('webhook_endpoints').select(['organization_id', 'created_at']).execute()).map(
      (row) => [row.organization_id, row.created_at],
    ),
  );
  const events = await db
    .selectFrom('events')
    .select(['id', 'organization_id', 'created_at', 'dispatched_at', 'payload'])
    .orderBy('id')
    .execute();
  const deliveries = await db
    .selectFrom('webhook_deliveries')
    .select(['delivery_id', 'event_id', 'status'])
    .execute();
  const deliveriesOf = new Map<number, string[]>();
  const statusOf = new Map<string, string>();
  for (const delivery of deliveries) {
    deliveriesOf.set(delivery.event_id, [
      ...(deliveriesOf.get(delivery.event_id) ?? []),
      delivery.delivery_id,
    ]);
    statusOf.set(delivery.delivery_id, delivery.status);
  }
  const received = new Map<string, ReceivedDelivery[]>();
  for (const request of options.received ?? [])
    received.set(request.deliveryId, [...(received.get(request.deliveryId) ?? []), request]);
  for (const event of events) {
    dispatched.checked += 1;
    const endpointSince = endpoints.get(event.organization_id);
    const needsDelivery = endpointSince !== undefined && endpointSince <= event.created_at;
    const ids = deliveriesOf.get(event.id) ?? [];
    if (event.dispatched_at === null) dispatched.fail(`event ${event.id} was never dispatched`);
    else if (needsDelivery && ids.length === 0) dispatched.fail(`event ${event.id} has no delivery`);
    if (!options.received || !needsDelivery) continue;
    delivered.checked += 1;
    const bodyHash = sha256Hex(event.payload);
    const requests = ids.flatMap((id) => received.get(id) ?? []);
    if (!ids.some((id) => statusOf.get(id) === 'delivered'))
      delivered.fail(`event ${event.id}: no delivery is marked delivered`);
    if (requests.length === 0) delivered.fail(`event ${event.id} never reached the receiver`);
    else if (!requests.some((request) => request.signatureValid && request.bodySha256 === bodyHash))
      delivered.fail(`event ${event.id} reached the receiver, but never signed and intact`);
  }
  if (options.received) {
    const known = new Set(statusOf.keys());
    for (const id of received.keys())
      if (!known.has(id)) delivered.fail(`unknown delivery id ${id} received`);
  }
  return options.received ? [dispatched.result(), delivered.result()] : [dispatched.result()];
}

export async function checkInvariants(
  db: Kysely<Database>,
  options: InvariantOptions = {},
): Promise<InvariantResult[]> {
  const count = await movementCounts(db);
  return [
    await checkWallets(db),
    await checkSettlements(db, count),
    ...(await checkRefundLedger(db, count)),
    await checkProviderAgreement(db),
    ...(await checkEvents(db, options)),
  ];
}

/** One line per invariant: ✓ or ✗, what it covered, and the first problems. */
export function formatInvariants(results: InvariantResult[]): string {
  return results
    .map((result) => {
      const head = `${result.problemCount === 0 ? 'ok  ' : 'FAIL'} ${result.name} (${result.checked} checked)`;
      if (result.problemCount === 0) return head;
      const more =
        result.problemCount > result.problems.length ? `\n       … ${result.problemCount} in all` : '';
      return `${head}\n${result.problems.map((problem) => `       - ${problem}`).join('\n')}${more}`;
    })
    .join('\n');
}
