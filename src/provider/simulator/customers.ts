// Simulated customers and saved cards. A setup saves a card on a customer without charging it; the 3-D
// Secure cards ask for the challenge first, the cards a bank refuses outright are not saved. The same
// idempotency key returns the same customer or setup.
import type { Selectable } from 'kysely';
import { randomBase62 } from '../../lib/ids.ts';
import type {
  CreateCustomerInput,
  ProviderOutcome,
  ProviderSetupState,
  SetupCardInput,
  SetupWrite,
} from '../types.ts';
import { openChallenge } from './challenges.ts';
import { cardFacts } from './payments.ts';
import { answerSetup, setupNeedsAuthentication } from './script.ts';
import { findPaymentMethod, nextActionOf, type SimContext, type SimDb, savedCardOf } from './store.ts';
import type { SimSetupsTable } from './table.ts';

export async function createSimCustomer(sim: SimContext, input: CreateCustomerInput) {
  await sim.db
    .insertInto('sim_customers')
    .values({
      customer_id: `simcus_${randomBase62(20)}`,
      idempotency_key: input.idempotencyKey,
      reference: input.reference,
      environment: input.environment,
      email: input.email,
      name: input.name,
      created_at: sim.clock().toISOString(),
    })
    .onConflict((conflict) => conflict.column('idempotency_key').doNothing())
    .execute();
  const row = await sim.db
    .selectFrom('sim_customers')
    .select('customer_id')
    .where('idempotency_key', '=', input.idempotencyKey)
    .executeTakeFirstOrThrow();
  return { customerId: row.customer_id };
}

type SetupRow = Selectable<SimSetupsTable>;

async function setupState(trx: SimDb, row: SetupRow): Promise<ProviderSetupState> {
  const method =
    row.status === 'succeeded' && row.payment_method_id !== null
      ? await findPaymentMethod(trx, row.payment_method_id)
      : undefined;
  return {
    setupId: row.setup_id,
    status: row.status,
    customerId: row.customer_id,
    savedCard: method ? savedCardOf(method) : null,
    nextAction: nextActionOf(row),
    lastError:
      row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? row.error_code },
  };
}

function outcomeOfSetup(state: ProviderSetupState): ProviderOutcome {
  if (state.status === 'succeeded') return { status: 'succeeded' };
  if (state.status === 'requires_action' && state.nextAction) {
    return { status: 'requires_action', nextAction: state.nextAction };
  }
  if (state.lastError) {
    return {
      status: 'failed',
      code: state.lastError.code,
      message: state.lastError.message,
      retryable: false,
    };
  }
  return { status: 'pending' };
}

const CARD_REQUIRED: SetupWrite = {
  outcome: {
    status: 'failed',
    code: 'card_required',
    message: 'The simulator saves a card typed into the hosted form.',
    retryable: false,
  },
  setup: null,
  clientSecret: null,
};

export async function setupSimCard(sim: SimContext, input: SetupCardInput): Promise<SetupWrite> {
  const card = input.card;
  if (card === null) return CARD_REQUIRED;
  const facts = cardFacts(card);
  return sim.db.transaction().execute(async (trx) => {
    const existing = await trx
      .selectFrom('sim_setups')
      .selectAll()
      .where('idempotency_key', '=', input.idempotencyKey)
      .executeTakeFirst();
    if (existing) {
      const state = await setupState(trx, existing);
      return { outcome: outcomeOfSetup(state), setup: state, clientSecret: null };
    }
    const customer = await trx
      .selectFrom('sim_customers')
      .select('customer_id')
      .where('customer_id', '=', input.customerId)
      .executeTakeFirst();
    if (!customer) {
      return {
        outcome: {
          status: 'failed',
          code: 'resource_missing',
          message: 'No such customer.',
          retryable: false,
        },
        setup: null,
        clientSecret: null,
      };
    }
    const now = sim.clock();
    const nowIso = now.toISOString();
    const setupId = `simseti_${randomBase62(20)}`;
    const refusal = answerSetup(facts.behaviour, facts.expMonth, facts.expYear, now);
    let paymentMethodId: string | null = null;
    let status: SetupRow['status'] = 'requires_payment_method';
    let nextAction = null;
    if (refusal === null || refusal === undefined) {
      paymentMethodId = `simpm_${randomBase62(24)}`;
      await trx
        .insertInto('sim_payment_methods')
        .values({
          payment_method_id: paymentMethodId,
          customer_id: input.customerId,
          behaviour: facts.behaviour,
          brand: facts.brand,
          last4: facts.last4,
          exp_month: facts.expMonth,
          exp_year: facts.expYear,
          created_at: nowIso,
        })
        .execute();
      if (setupNeedsAuthentication(facts.behaviour)) {
        status = 'requires_action';
        nextAction = await openChallenge(sim, trx, 'setup', setupId, null);
      } else {
        status = 'succeeded';
      }
    }
    const row = await trx
      .insertInto('sim_setups')
      .values({
        setup_id: setupId,
        idempotency_key: input.idempotencyKey,
        reference: input.reference,
        environment: input.environment,
        customer_id: input.customerId,
        status,
        payment_method_id: paymentMethodId,
        error_code: refusal?.declineCode ?? null,
        error_message: refusal?.errorMessage ?? null,
        next_action: nextAction === null ? null : JSON.stringify(nextAction),
        created_at: nowIso,
        updated_at: nowIso,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const state = await setupState(trx, row);
    return { outcome: outcomeOfSetup(state), setup: state, clientSecret: null };
  });
}

export async function readSimSetup(
  sim: SimContext,
  column: 'setup_id' | 'idempotency_key',
  value: string,
): Promise<ProviderSetupState | null> {
  const row = await sim.db
    .selectFrom('sim_setups')
    .selectAll()
    .where(column, '=', value)
    .orderBy('id', 'desc')
    .executeTakeFirst();
  return row ? setupState(sim.db, row) : null;
}
