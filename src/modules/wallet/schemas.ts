// Response schemas of the wallet: its buckets and the movements of its ledger.
import { Type } from 'typebox';
import { Environment, Money, Shape, Timestamp } from '../../http/schemas.ts';

const bucketFields = {
  balance: Money,
  reserve: Money,
  held: { ...Money, description: 'Refund holds and pending payouts.' },
  available: { ...Money, description: 'balance + reserve − held.' },
  currency: Type.Literal('USD'),
};

export const WalletBuckets = Shape(bucketFields, 'The wallet in USD.');

/** One movement of the ledger, with what it changed in each bucket. */
export const WalletMovement = Shape({
  id: Type.Integer(),
  type: Type.Enum([
    'settlement',
    'reserve_release',
    'refund_hold',
    'refund_release',
    'refund_debit',
    'refund_late_debit',
    'refund_reversal',
    'payout_hold',
    'payout_release',
    'payout_debit',
  ]),
  reference: Type.String({ description: 'The payment, refund or payout public id.' }),
  amount: Money,
  balance_change: Money,
  reserve_change: Money,
  held_change: Money,
  created_at: Timestamp,
});

/** GET /wallet/ */
export const Wallet = Shape(
  { ...bucketFields, environment: Environment, entries: Type.Array(WalletMovement) },
  'The wallet of one environment and its recent movements, newest first.',
);
