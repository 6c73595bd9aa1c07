// Payout destinations: the bank account an environment's payouts go to (one current account per
// organization and environment). The full account number is sealed with AES-256-GCM under
// KASSA_SECRET_KEY, like webhook secrets: the merchant never sees it again (only the country, the
// routing number or BIC, and the last four), and only the operator's tools open it to send the money.
// A change never edits a row: it stamps the current one replaced and adds a new one, so each payout
// keeps the account it was requested for.
import type { AppContext } from '../../context.ts';
import { isPostgres } from '../../db/connection.ts';
import type { Executor } from '../../db/database.ts';
import { NotFoundError, ValidationError } from '../../http/errors.ts';
import { decrypt, encrypt } from '../../lib/crypto.ts';
import { newPublicId } from '../../lib/ids.ts';
import type { Environment } from '../api-keys/table.ts';
import { type Actor, recordAudit } from '../audit/record.ts';
import {
  BankAccountError,
  formatIban,
  parseIban,
  parseRoutingNumber,
  parseUsAccountNumber,
} from './bank-account.ts';
import type { PayoutDestinationRow } from './table.ts';

type Deps = Pick<AppContext, 'db' | 'clock' | 'config'>;

export interface DestinationInput {
  type: 'iban' | 'us_account';
  account_holder: string;
  iban?: string;
  bic?: string;
  routing_number?: string;
  account_number?: string;
}

/** What is sealed: the numbers the bank needs that the dashboard never shows again. */
type SealedNumber = { iban: string } | { account_number: string };

interface ParsedDestination {
  type: 'iban' | 'us_account';
  accountHolder: string;
  country: string;
  bankCode: string | null;
  last4: string;
  sealed: SealedNumber;
}

function checked<T>(field: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (error instanceof BankAccountError) throw new ValidationError(`${field}: ${error.message}`);
    throw error;
  }
}

function required(field: string, value: string | undefined): string {
  const text = value?.trim() ?? '';
  if (!text) throw new ValidationError(`${field}: this field is required.`);
  return text;
}

const BIC = /^[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?$/;

export function parseDestination(input: DestinationInput): ParsedDestination {
  const accountHolder = required('account_holder', input.account_holder);
  if (input.type === 'iban') {
    for (const field of ['routing_number', 'account_number'] as const)
      if (input[field] !== undefined) throw new ValidationError(`${field}: not used with an IBAN.`);
    const iban = checked('iban', () => parseIban(required('iban', input.iban)));
    const bic = input.bic?.replace(/\s+/g, '').toUpperCase() || null;
    if (bic !== null && !BIC.test(bic))
      throw new ValidationError('bic: must be a BIC of 8 or 11 letters and digits, such as DEUTDEFF.');
    return {
      type: 'iban',
      accountHolder,
      country: iban.slice(0, 2),
      bankCode: bic,
      last4: iban.slice(-4),
      sealed: { iban },
    };
  }
  for (const field of ['iban', 'bic'] as const)
    if (input[field] !== undefined) throw new ValidationError(`${field}: not used with a US account.`);
  const routing = checked('routing_number', () =>
    parseRoutingNumber(required('routing_number', input.routing_number)),
  );
  const account = checked('account_number', () =>
    parseUsAccountNumber(required('account_number', input.account_number)),
  );
  return {
    type: 'us_account',
    accountHolder,
    country: 'US',
    bankCode: routing,
    last4: account.slice(-4),
    sealed: { account_number: account },
  };
}

/** "DE IBAN •••• 3000" or "Routing 110000000 · •••• 6789": how the account is shown from now on. */
export function destinationLabel(
  row: Pick<PayoutDestinationRow, 'type' | 'country' | 'bank_code' | 'last4'>,
) {
  return row.type === 'iban'
    ? `${row.country} IBAN •••• ${row.last4}`
    : `Routing ${row.bank_code} · Account •••• ${row.last4}`;
}

export function presentDestination(row: PayoutDestinationRow) {
  return {
    id: row.public_id,
    type: row.type,
    account_holder: row.account_holder,
    country: row.country,
    bic: row.type === 'iban' ? row.bank_code : null,
    routing_number: row.type === 'us_account' ? row.bank_code : null,
    last4: row.last4,
    label: destinationLabel(row),
    environment: row.environment,
    created_at: row.created_at,
  };
}

export function findCurrentDestination(db: Executor, organizationId: number, environment: Environment) {
  return db
    .selectFrom('payout_destinations')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment)
    .where('replaced_at', 'is', null)
    .executeTakeFirst();
}

/** GET /api/payouts/destination/ */
export async function getDestination(db: Executor, organizationId: number, environment: Environment) {
  const row = await findCurrentDestination(db, organizationId, environment);
  return { destination: row ? presentDestination(row) : null };
}

/** PUT /api/payouts/destination/: the new account replaces the current one (pending payouts keep theirs). */
export async function setDestination(
  deps: Deps,
  organizationId: number,
  environment: Environment,
  input: DestinationInput,
  actor: Actor,
) {
  const parsed = parseDestination(input);
  const sealed = encrypt(JSON.stringify(parsed.sealed), deps.config.secretKey);
  return deps.db.transaction().execute(async (trx) => {
    // Changes of one organization's account take turns (SQLite's writes already do), so each replaces
    // the one before it and exactly one stays current.
    if (isPostgres(trx)) {
      await trx
        .selectFrom('organizations')
        .select('id')
        .where('id', '=', organizationId)
        .forUpdate()
        .execute();
    }
    const now = deps.clock().toISOString();
    await retireCurrent(trx, organizationId, environment, now);
    const row = await trx
      .insertInto('payout_destinations')
      .values({
        public_id: newPublicId('destination'),
        organization_id: organizationId,
        environment,
        type: parsed.type,
        account_holder: parsed.accountHolder,
        country: parsed.country,
        bank_code: parsed.bankCode,
        last4: parsed.last4,
        number_sealed: sealed,
        created_at: now,
        replaced_at: null,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    const destination = presentDestination(row);
    await recordAudit(
      trx,
      organizationId,
      actor,
      {
        action: 'payout_destination.set',
        target: { type: 'payout_destination', id: row.public_id },
        details: { environment, label: destination.label },
      },
      now,
    );
    return { destination };
  });
}

function retireCurrent(trx: Executor, organizationId: number, environment: Environment, now: string) {
  return trx
    .updateTable('payout_destinations')
    .set({ replaced_at: now })
    .where('organization_id', '=', organizationId)
    .where('environment', '=', environment)
    .where('replaced_at', 'is', null)
    .executeTakeFirst();
}

/** DELETE /api/payouts/destination/: payouts requested from now on have no account until a new one is set. */
export async function removeDestination(
  deps: Deps,
  organizationId: number,
  environment: Environment,
  actor: Actor,
) {
  const now = deps.clock().toISOString();
  await deps.db.transaction().execute(async (trx) => {
    const result = await retireCurrent(trx, organizationId, environment, now);
    if (Number(result.numUpdatedRows) === 0) throw new NotFoundError('No payout destination is set.');
    await recordAudit(
      trx,
      organizationId,
      actor,
      { action: 'payout_destination.removed', target: null, details: { environment } },
      now,
    );
  });
}

/**
 * The operator's view of a payout's account, with the full number opened: what `kassa payout list`
 * and the bank transfer need. Never sent to the dashboard.
 */
export async function operatorDestination(deps: Pick<AppContext, 'db' | 'config'>, destinationId: number) {
  const row = await deps.db
    .selectFrom('payout_destinations')
    .selectAll()
    .where('id', '=', destinationId)
    .executeTakeFirst();
  if (!row) return undefined;
  const number = JSON.parse(decrypt(row.number_sealed, deps.config.secretKey)) as SealedNumber;
  return {
    ...presentDestination(row),
    ...('iban' in number ? { iban: formatIban(number.iban) } : { account_number: number.account_number }),
  };
}
