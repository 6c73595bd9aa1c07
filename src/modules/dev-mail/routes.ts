// The development mailbox (session): GET /api/dev/mail/ and GET /api/dev/mail/{id}/ list and read the
// .eml files Kassa wrote to <data dir>/mail/ because no SMTP server is configured. The routes exist
// only with KASSA_ENV=development and no KASSA_SMTP_URL (elsewhere they are a plain 404), and show only
// the messages addressed to an active member of the caller's organization, or the organization's own
// pending invitation mail to someone who is not a member yet.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Type } from 'typebox';
import type { AppContext } from '../../context.ts';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { NotFoundError } from '../../http/errors.ts';
import { Nullable, Shape, Timestamp } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { sha256Hex } from '../../lib/ids.ts';
import { devMailboxEnabled, mailDirectory } from '../../mail/mailer.ts';
import { addresses, parseEml } from './eml.ts';

/** The newest messages looked at; older ones stay on disk. */
const MAILBOX_LIMIT = 200;
const MESSAGE_ID = /^[A-Za-z0-9._-]{1,200}$/;
const PREVIEW_LENGTH = 160;

const MailSummary = Shape({
  id: Type.String({ description: 'The file name without .eml.' }),
  to: Type.String(),
  subject: Type.String(),
  date: Nullable(Timestamp),
  preview: Type.String({ description: 'The start of the text.' }),
});

const MailMessage = Shape({
  id: Type.String(),
  from: Type.String(),
  to: Type.String(),
  subject: Type.String(),
  date: Nullable(Timestamp),
  text: Type.String(),
});

interface Mail {
  id: string;
  from: string;
  to: string;
  recipients: string[];
  subject: string;
  date: string | null;
  text: string;
}

async function readMail(directory: string, id: string): Promise<Mail | undefined> {
  let raw: string;
  try {
    raw = await readFile(join(directory, `${id}.eml`), 'utf8');
  } catch {
    return undefined;
  }
  const { headers, text } = parseEml(raw);
  const sent = Date.parse(headers.get('date') ?? '');
  const date = Number.isNaN(sent) ? (await stat(join(directory, `${id}.eml`))).mtime : new Date(sent);
  return {
    id,
    from: headers.get('from') ?? '',
    to: headers.get('to') ?? '',
    recipients: addresses(headers.get('to')),
    subject: headers.get('subject') ?? '',
    date: date.toISOString(),
    text,
  };
}

/** Whose mail an organization may read here: its active members', and its pending invitations. */
interface Readable {
  members: Set<string>;
  /** Address → the token hashes of the organization's pending, unexpired invitations to it. */
  invitations: Map<string, Set<string>>;
}

/**
 * Removed members, and addresses whose invitation was accepted, revoked or expired, are no longer the
 * organization's: the same address may have joined another organization since, whose password-reset
 * mail must not be readable here.
 */
async function readableMail(ctx: AppContext, organizationId: number): Promise<Readable> {
  const now = ctx.clock().toISOString();
  const [members, invitations] = await Promise.all([
    ctx.db
      .selectFrom('users')
      .select('email')
      .where('organization_id', '=', organizationId)
      .where('removed_at', 'is', null)
      .execute(),
    ctx.db
      .selectFrom('invitations')
      .select(['email', 'token_hash'])
      .where('organization_id', '=', organizationId)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .where('expires_at', '>', now)
      .execute(),
  ]);
  const readable: Readable = {
    members: new Set(members.map((row) => row.email.toLowerCase())),
    invitations: new Map(),
  };
  for (const row of invitations) {
    const email = row.email.toLowerCase();
    const hashes = readable.invitations.get(email) ?? new Set<string>();
    readable.invitations.set(email, hashes.add(row.token_hash));
  }
  return readable;
}

const INVITE_TOKEN = /\/dashboard\/accept-invite#token=([A-Za-z0-9_-]+)/g;

/**
 * Mail to a member, or the organization's own invitation mail to an invitee (its link's token is one of
 * the organization's pending invitations): two organizations inviting the same address do not read each
 * other's invitation, whose link would let them join the other one.
 */
function isOurs(mail: Mail, readable: Readable): boolean {
  if (mail.recipients.some((address) => readable.members.has(address))) return true;
  const tokens = [...mail.text.matchAll(INVITE_TOKEN)].map((match) => sha256Hex(match[1]));
  return mail.recipients.some((address) => {
    const own = readable.invitations.get(address);
    return own !== undefined && tokens.some((hash) => own.has(hash));
  });
}

export async function devMailRoutes(app: App, { ctx }: RouteOptions) {
  if (!devMailboxEnabled(ctx.config)) return;
  const directory = mailDirectory(ctx.config);
  app.addHook('preValidation', sessionAuth(ctx));
  const tags = ['Development'];

  app.get(
    '/dev/mail/',
    {
      schema: {
        tags,
        summary: 'The development mailbox (development only, no SMTP)',
        response: { 200: Shape({ directory: Type.String(), results: Type.Array(MailSummary) }) },
      },
    },
    async (request) => {
      const readable = await readableMail(ctx, sessionOf(request).organizationId);
      const names = (await readdir(directory).catch(() => [] as string[]))
        .filter((name) => name.endsWith('.eml') && MESSAGE_ID.test(name.slice(0, -4)))
        .sort()
        .reverse()
        .slice(0, MAILBOX_LIMIT);
      const results = [];
      for (const name of names) {
        const mail = await readMail(directory, name.slice(0, -4));
        if (!mail || !isOurs(mail, readable)) continue;
        const preview = mail.text.replace(/\s+/g, ' ').trim().slice(0, PREVIEW_LENGTH);
        results.push({ id: mail.id, to: mail.to, subject: mail.subject, date: mail.date, preview });
      }
      return { directory, results };
    },
  );

  app.get(
    '/dev/mail/:id/',
    {
      schema: {
        tags,
        summary: 'One message of the development mailbox',
        params: Type.Object({ id: Type.String({ maxLength: 200 }) }),
        response: { 200: MailMessage },
      },
    },
    async (request) => {
      const { id } = request.params;
      const mail = MESSAGE_ID.test(id) ? await readMail(directory, id) : undefined;
      const readable = await readableMail(ctx, sessionOf(request).organizationId);
      if (!mail || !isOurs(mail, readable)) throw new NotFoundError('Message not found.');
      const { recipients: _recipients, ...message } = mail;
      return message;
    },
  );
}
