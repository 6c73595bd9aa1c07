// The organization: its profile (a few fields editable, the commercial settings operator-set)
// and the creation of merchants by the operator.

import type { AppContext } from '../../context.ts';
import type { Executor } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { ValidationError } from '../../http/errors.ts';
import { randomBase62 } from '../../lib/ids.ts';
import { formatAmount, toBigInt } from '../../lib/money.ts';
import { type Actor, OPERATOR, recordAudit } from '../audit/record.ts';
import { newPasswordHash } from '../auth/passwords.ts';
import { parseRedirectOrigins, redirectOriginsOf } from './redirect-origins.ts';
import type { OrganizationRow } from './table.ts';

export function presentOrganization(row: OrganizationRow) {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    website: row.website,
    contact_email: row.contact_email,
    telegram: row.telegram,
    price_mode: row.price_mode,
    fee_percent: formatAmount(toBigInt(row.fee_bp)),
    tax_rate_percent: formatAmount(toBigInt(row.tax_rate_bp)),
    rolling_reserve_percent: formatAmount(toBigInt(row.rolling_reserve_bp)),
    rolling_reserve_days: row.rolling_reserve_days,
    min_payment: formatAmount(toBigInt(row.min_payment)),
    max_payment: formatAmount(toBigInt(row.max_payment)),
    max_active_api_keys: row.max_active_api_keys,
    status: row.status,
    time_zone: row.time_zone,
    test_mode_default: row.test_mode_default === 1,
    redirect_origins: redirectOriginsOf(row),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export const EDITABLE_FIELDS = [
  'name',
  'website',
  'contact_email',
  'telegram',
  'price_mode',
  'time_zone',
  'redirect_origins',
] as const;
export const READ_ONLY_FIELDS = [
  'id',
  'slug',
  'fee_percent',
  'fees',
  'tax_rate_percent',
  'min_payment',
  'max_payment',
  'max_active_api_keys',
  'status',
  'test_mode_default',
  'created_at',
  'updated_at',
];

export function getOrganization(db: Executor, organizationId: number) {
  return db
    .selectFrom('organizations')
    .selectAll()
    .where('id', '=', organizationId)
    .executeTakeFirstOrThrow();
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** An absolute http(s) URL with a host: what a merchant's website can be. */
function isWebUrl(value: string): boolean {
  if (!/^https?:\/\/\S+$/i.test(value)) return false;
  try {
    return new URL(value).hostname !== '';
  } catch {
    return false;
  }
}

function text(field: string, value: unknown, max: number, allowEmpty: boolean): string {
  if (typeof value !== 'string') throw new ValidationError(`${field}: must be of type string.`);
  const trimmed = value.trim();
  if (!allowEmpty && !trimmed) throw new ValidationError(`${field}: may not be blank.`);
  if (trimmed.length > max) throw new ValidationError(`${field}: must be at most ${max} characters.`);
  return trimmed;
}

/** An IANA time zone name the runtime knows ("Europe/Paris", "UTC"), in its canonical spelling. */
function timeZone(value: unknown): string {
  if (typeof value !== 'string') throw new ValidationError('time_zone: must be of type string.');
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: value.trim() }).resolvedOptions().timeZone;
  } catch {
    throw new ValidationError('time_zone: must be an IANA time zone such as Europe/Paris or UTC.');
  }
}

/** Validates a free-form PATCH body: editable fields only, read-only ones refused by name. */
export function parseOrganizationPatch(body: Record<string, unknown>) {
  const changes: Partial<Record<(typeof EDITABLE_FIELDS)[number], string>> = {};
  for (const [field, value] of Object.entries(body)) {
    if (READ_ONLY_FIELDS.includes(field) || field.startsWith('rolling_reserve_')) {
      throw new ValidationError(`${field}: this field is read-only.`);
    }
    switch (field) {
      case 'name':
        changes.name = text(field, value, 200, false);
        break;
      case 'website': {
        const website = text(field, value, 2048, true);
        if (website && !isWebUrl(website)) throw new ValidationError('website: must be a valid URL.');
        changes.website = website;
        break;
      }
      case 'contact_email': {
        const email = text(field, value, 254, true);
        if (email && !EMAIL.test(email)) throw new ValidationError('contact_email: must be a valid email.');
        changes.contact_email = email;
        break;
      }
      case 'telegram':
        changes.telegram = text(field, value, 100, true);
        break;
      case 'time_zone':
        changes.time_zone = timeZone(value);
        break;
      case 'price_mode':
        if (value !== 'HT' && value !== 'TTC')
          throw new ValidationError('price_mode: must be one of HT, TTC.');
        changes.price_mode = value;
        break;
      case 'redirect_origins':
        changes.redirect_origins = JSON.stringify(parseRedirectOrigins(value));
        break;
      default:
        throw new ValidationError(`${field}: unknown field.`);
    }
  }
  return changes;
}

export async function updateOrganization(
  ctx: AppContext,
  organizationId: number,
  body: Record<string, unknown>,
  actor: Actor,
) {
  const changes = parseOrganizationPatch(body);
  if (Object.keys(changes).length > 0) {
    const now = ctx.clock().toISOString();
    await ctx.db.transaction().execute(async (trx) => {
      await trx
        .updateTable('organizations')
        .set({
          ...changes,
          price_mode: changes.price_mode as 'HT' | 'TTC' | undefined,
          updated_at: now,
        })
        .where('id', '=', organizationId)
        .execute();
      await recordAudit(
        trx,
        organizationId,
        actor,
        {
          action: 'organization.updated',
          target: { type: 'organization', id: organizationId },
          details: { changes },
        },
        now,
      );
    });
  }
  return presentOrganization(await getOrganization(ctx.db, organizationId));
}

function slugify(name: string): string {
  const base = name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40);
  return base || 'org';
}

export interface NewMerchant {
  organization: string;
  email: string;
  password: string;
  name?: string;
}

/** Creates an organization with its first user (operator action: `kassa merchant create`). */
export async function createMerchant(ctx: AppContext, input: NewMerchant) {
  const email = input.email.trim().toLowerCase();
  if (!EMAIL.test(email)) throw new ValidationError('email: must be a valid email.');
  const orgName = text('org', input.organization, 200, false);
  // The bounds of every password the dashboard sets (login refuses a longer one), and a full hash queue
  // is the DomainError the routes answer (`kassa` prints its one line), not a HashQueueFullError.
  const passwordHash = await newPasswordHash('password', input.password, null);
  const now = ctx.clock().toISOString();
  // Two concurrent creations with one email (or one slug) both pass the checks below and one insert then
  // hits a UNIQUE index: running the transaction again turns that into the email's 400, or a fresh slug.
  for (let attempt = 1; ; attempt++) {
    try {
      return await insertMerchant(ctx, { email, orgName, name: input.name ?? '', passwordHash, now });
    } catch (error) {
      if (attempt >= 3 || !isUniqueViolation(error)) throw error;
    }
  }
}

function insertMerchant(
  ctx: AppContext,
  input: { email: string; orgName: string; name: string; passwordHash: string; now: string },
) {
  const { email, orgName, passwordHash, now } = input;
  return ctx.db.transaction().execute(async (trx) => {
    const taken = await trx.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst();
    if (taken) throw new ValidationError('email: a user with this email already exists.');
    let slug = slugify(orgName);
    if (await trx.selectFrom('organizations').select('id').where('slug', '=', slug).executeTakeFirst()) {
      slug = `${slug}-${randomBase62(6).toLowerCase()}`;
    }
    const organization = await trx
      .insertInto('organizations')
      .values({ slug, name: orgName, contact_email: email, created_at: now, updated_at: now })
      .returning(['id', 'slug', 'name'])
      .executeTakeFirstOrThrow();
    const user = await trx
      .insertInto('users')
      .values({
        organization_id: organization.id,
        email,
        name: input.name,
        password_hash: passwordHash,
        created_at: now,
      })
      .returning(['id', 'email'])
      .executeTakeFirstOrThrow();
    await recordAudit(
      trx,
      organization.id,
      OPERATOR,
      {
        action: 'merchant.created',
        target: { type: 'organization', id: organization.id },
        details: { owner_email: email, name: orgName },
      },
      now,
    );
    return { organization, user };
  });
}
