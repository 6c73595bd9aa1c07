// Refunding from the dashboard takes the code emailed to the merchant: POST /api/refunds/verification-code/
// (202), then POST /api/refunds/ {transaction_id, amount?, reason, verification_code}.
import { type FormEvent, useState } from 'react';
import { api } from '../api.ts';
import { money } from '../format.ts';
import { useAction } from '../hooks.ts';
import type { Payment, RefundCreated } from '../types.ts';
import { Dialog, FormError, FormFooter } from '../ui.tsx';

const AMOUNT = /^\d+(\.\d{1,2})?$/;

/** What is left to refund (charge currency), when the payment says how much was refunded already. */
function remainingOf(payment: Payment): string | null {
  const refunded = payment.refunded_amount;
  if (refunded === undefined || Number(refunded) === 0) return null;
  const cents = Math.round(Number(payment.amount) * 100) - Math.round(Number(refunded) * 100);
  return (Math.max(0, cents) / 100).toFixed(2);
}

export function RefundButton({
  payment,
  onRefunded,
}: {
  payment: Payment;
  onRefunded: (refund: RefundCreated) => void;
}) {
  const [open, setOpen] = useState(false);
  const [codeSent, setCodeSent] = useState<string | null>(null);
  const [amountError, setAmountError] = useState<string | null>(null);
  const remainder = remainingOf(payment);
  const sendCode = useAction(() =>
    api
      .post<{ detail?: string } | undefined>('/refunds/verification-code/', { transaction_id: payment.id })
      .then((answer) => answer?.detail ?? 'A verification code is on its way to your email.'),
  );
  const refund = useAction((body: Record<string, string>) => api.post<RefundCreated>('/refunds/', body));

  async function requestCode() {
    const sent = await sendCode.run();
    if (sent) setCodeSent(sent);
  }

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const amount = String(form.get('amount') ?? '').trim();
    if (amount && !AMOUNT.test(amount)) {
      setAmountError('Enter an amount like 12.50, with at most two decimals.');
      return;
    }
    setAmountError(null);
    const body: Record<string, string> = {
      transaction_id: payment.id,
      reason: String(form.get('reason') ?? '').trim(),
      verification_code: String(form.get('verification_code') ?? '').trim(),
    };
    if (amount) body.amount = amount;
    const created = await refund.run(body);
    if (created) {
      setOpen(false);
      setCodeSent(null);
      onRefunded(created);
    }
  }

  return (
    <>
      <button type="button" className="button" onClick={() => setOpen(true)}>
        Refund
      </button>
      <Dialog open={open} title={`Refund ${payment.id}`} onClose={() => setOpen(false)}>
        <div className="dialog-body">
          <p>
            Paid: <strong>{money(payment.amount, payment.currency)}</strong>
            {remainder !== null ? (
              <>
                {' '}
                · already refunded: {money(payment.refunded_amount, payment.currency)} · at most{' '}
                <strong>{money(remainder, payment.currency)}</strong> left to refund
              </>
            ) : null}
          </p>
          <p className="muted">
            Dashboard refunds need a 6-digit code that we email to you. It is valid for 10 minutes.
          </p>
          <button
            type="button"
            className={codeSent ? 'button secondary small' : 'button'}
            onClick={requestCode}
            disabled={sendCode.pending}
          >
            {sendCode.pending ? 'Sending…' : codeSent ? 'Send a new code' : 'Email me a code'}
          </button>
          <FormError message={sendCode.error} />
          {codeSent ? (
            <p className="notice notice-info" role="status">
              {codeSent}
            </p>
          ) : null}
        </div>
        {codeSent ? (
          <form onSubmit={submit} className="stack" aria-label="Refund details">
            <label className="field">
              <span>Amount ({payment.currency}), optional</span>
              <input
                name="amount"
                inputMode="decimal"
                autoComplete="off"
                placeholder="Leave empty to refund the whole remainder"
                aria-invalid={amountError ? true : undefined}
                aria-describedby={amountError ? 'refund-amount-error' : undefined}
              />
            </label>
            {amountError ? (
              <p id="refund-amount-error" className="field-error">
                {amountError}
              </p>
            ) : null}
            <label className="field">
              <span>Reason (for your records; the customer does not see it)</span>
              <textarea name="reason" required maxLength={500} rows={3} />
            </label>
            <label className="field">
              <span>Verification code</span>
              <input
                name="verification_code"
                required
                inputMode="numeric"
                autoComplete="one-time-code"
                pattern="\d{6}"
                maxLength={6}
                title="The 6-digit code from the email"
              />
            </label>
            <FormFooter
              state={refund}
              label="Refund payment"
              pendingLabel="Refunding…"
              danger
              onCancel={() => setOpen(false)}
            />
          </form>
        ) : null}
      </Dialog>
    </>
  );
}
