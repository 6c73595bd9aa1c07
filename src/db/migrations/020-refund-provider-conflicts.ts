// A refund whose provider changed its word after Kassa recorded the refund completed or failed
// (docs/wallet-refunds-payouts.md, "When the provider contradicts a finished refund"): Kassa does not move
// the finished status the merchant was told of, it records the disagreement for an operator, as payments
// record theirs (`payments.provider_conflict`, migration 009). While one is open, the payment takes no new
// refund. The partial index serves the operator's list and `kassa doctor` without reading every refund.
import { type Kysely, type Migration, sql } from 'kysely';

export function refundProviderConflicts(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      // What the provider says against Kassa's status, in words for the operator; null: none open.
      await db.schema.alterTable('refunds').addColumn('provider_conflict', 'text').execute();
      // The provider's status that contradicts Kassa's: completed, failed, or processing (it has a refund
      // Kassa failed, not finished yet). Null with provider_conflict.
      await db.schema.alterTable('refunds').addColumn('provider_conflict_status', 'text').execute();
      // When Kassa first read the contradiction (null with provider_conflict).
      await db.schema.alterTable('refunds').addColumn('provider_conflict_at', 'text').execute();
      await db.schema
        .createIndex('refunds_provider_conflict')
        .on('refunds')
        .column('provider_conflict_at')
        .where(sql.ref('provider_conflict'), 'is not', null)
        .execute();
    },
  };
}
