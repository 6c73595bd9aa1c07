// A webhook secret rotation may keep the previous secret for an overlap the merchant asks for
// (POST /organization/webhook/rotate/ {previous_secret_expires_in}): deliveries then carry a Standard
// Webhooks signature with each secret until it expires. The previous secret is sealed like the current
// one (AES-256-GCM with KASSA_SECRET_KEY); both columns are null when there is none, and the retention
// loop sets them back to null once the overlap has ended.
import type { Kysely, Migration } from 'kysely';

export function webhookPreviousSecret(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema
        .alterTable('webhook_endpoints')
        .addColumn('previous_secret_encrypted', 'text')
        .execute();
      await db.schema
        .alterTable('webhook_endpoints')
        .addColumn('previous_secret_expires_at', 'text')
        .execute();
    },
  };
}
