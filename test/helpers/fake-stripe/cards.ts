// The fake Stripe's test payment methods: Stripe's own test ids (pm_card_visa, …), each scripted as Stripe
// documents it: success, declines, 3-D Secure always or on setup only, saved-but-declined off-session,
// a payment method that stays processing until the test settles it, and a Link payment method (no card).
export type CardBehaviour =
  | 'succeed'
  | 'decline'
  | 'authenticate_always'
  | 'authenticate_on_setup'
  | 'decline_off_session'
  | 'processing';

export interface TestCard {
  /** The payment method's type: a card, or Link (a wallet whose charges carry no card details). */
  type: 'card' | 'link';
  brand: string;
  last4: string;
  expMonth: number;
  expYear: number;
  behaviour: CardBehaviour;
  /** For declines: Stripe's error code and decline code, and the message it shows. */
  decline?: { code: string; declineCode: string; message: string };
}

const card = (
  brand: string,
  last4: string,
  behaviour: CardBehaviour,
  decline?: TestCard['decline'],
): TestCard => ({
  type: 'card',
  brand,
  last4,
  expMonth: 12,
  expYear: 2034,
  behaviour,
  decline,
});

export const TEST_PAYMENT_METHODS: Record<string, TestCard> = {
  pm_card_visa: card('visa', '4242', 'succeed'),
  pm_card_mastercard: card('mastercard', '4444', 'succeed'),
  pm_card_chargeDeclined: card('visa', '0002', 'decline', {
    code: 'card_declined',
    declineCode: 'generic_decline',
    message: 'Your card was declined.',
  }),
  pm_card_chargeDeclinedInsufficientFunds: card('visa', '9995', 'decline', {
    code: 'card_declined',
    declineCode: 'insufficient_funds',
    message: 'Your card has insufficient funds.',
  }),
  pm_card_chargeDeclinedExpiredCard: card('visa', '0069', 'decline', {
    code: 'expired_card',
    declineCode: 'expired_card',
    message: 'Your card has expired.',
  }),
  pm_card_authenticationRequired: card('visa', '3184', 'authenticate_always'),
  pm_card_authenticationRequiredOnSetup: card('visa', '3155', 'authenticate_on_setup'),
  pm_card_chargeCustomerFail: card('visa', '0341', 'decline_off_session', {
    code: 'card_declined',
    declineCode: 'generic_decline',
    message: 'Your card was declined.',
  }),
  /** Not one of Stripe's ids: an asynchronous method (like a bank debit) that stays processing. */
  pm_fake_processing: card('visa', '1111', 'processing'),
  /**
   * Not one of Stripe's ids: a Link payment method (type link), which the Payment Element offers when the
   * account enables Link and the intent allows it; its charges succeed and carry no card details.
   */
  pm_fake_link: { ...card('link', '', 'succeed'), type: 'link' },
};
