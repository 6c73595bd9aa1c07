// What the dashboard says about the payment provider: a banner while production runs on the built-in
// simulator (no money moves), and a payment's provider call whose outcome Kassa does not know yet
// (being read back) or still did not know after the reconciler's last read (flagged for review).
import { useApi } from './hooks.ts';
import type { ProviderReview } from './types.ts';

interface ProviderStatus {
  production_provider: 'simulator' | 'stripe';
  simulated_production: boolean;
}

export function SimulatedBanner() {
  const status = useApi<ProviderStatus>('/provider/status/');
  if (!status.data?.simulated_production) return null;
  return (
    <div className="notice notice-info simulated-banner" role="status">
      <p>
        <strong>Simulated payments.</strong> Production runs on Kassa's built-in simulator: no money moves and
        every payment is marked simulated. Set <code>KASSA_PROVIDER=stripe</code> to take real payments.
      </p>
    </div>
  );
}

/** A payment's provider call in doubt, on the payment page. */
export function ProviderReviewNotice({ review }: { review: ProviderReview | null | undefined }) {
  if (!review) return null;
  const flagged = review.state === 'flagged';
  return (
    <div
      className={flagged ? 'notice notice-error' : 'notice notice-info'}
      role={flagged ? 'alert' : 'status'}
    >
      <p>
        {flagged ? (
          <>
            <strong>Needs review.</strong> Kassa could not confirm the outcome of the provider call{' '}
            <code>{review.operation}</code>: check it in the provider's dashboard before acting on this
            payment.
          </>
        ) : (
          <>
            <strong>Confirming with the provider.</strong> The answer to <code>{review.operation}</code> was
            lost; Kassa is reading it back from the provider, and never repeats the charge.
          </>
        )}
      </p>
      {review.reason ? <p className="muted">{review.reason}</p> : null}
    </div>
  );
}

/** The short mark beside a payment's status in lists. */
export function ProviderReviewMark({ review }: { review: ProviderReview | null | undefined }) {
  if (!review) return null;
  return (
    <span
      className={review.state === 'flagged' ? 'badge badge-bad' : 'badge badge-warn'}
      title={review.operation}
    >
      {review.state === 'flagged' ? 'needs review' : 'confirming'}
    </span>
  );
}
