// One payment: amounts, fees and breakdown, the card-attempt timeline, its refunds, the webhook
// events sent for it; refund it (with the emailed code) or resend its webhook.
import { useEffect, useState } from 'react';
import { api, asPage, type Page } from '../api.ts';
import { dateTime, money, titleCase } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import { ProviderReviewNotice } from '../provider-notices.tsx';
import { Link } from '../router.tsx';
import { useEnvironment } from '../test-mode.tsx';
import type { Delivery, DepositAttempt, Payment, PaymentLink, Refund, RefundCreated } from '../types.ts';
import {
  DataTable,
  Detail,
  Empty,
  ErrorNotice,
  FormError,
  Loading,
  PageHeader,
  ResourceState,
  StatusBadge,
  Success,
} from '../ui.tsx';
import { RefundButton } from './refund-dialog.tsx';
import { RefundsTable } from './refunds.tsx';

const REFUNDABLE = new Set(['paid', 'refund_pending']);

function feeOf(payment: Payment): string | undefined {
  if (payment.fee_amount) return payment.fee_amount;
  if (payment.fee) return payment.fee;
  if (payment.net_amount === undefined) return undefined;
  return (
    (Math.round(Number(payment.amount) * 100) - Math.round(Number(payment.net_amount) * 100)) /
    100
  ).toFixed(2);
}

/** An attempt's status in the merchant's words: a card the bank refused is a decline. */
const ATTEMPT_LABELS: Record<string, string> = {
  requires_payment_method: 'Declined',
  succeeded: 'Succeeded',
  failed: 'Failed',
  canceled: 'Canceled',
  pending: 'Pending',
  processing: 'Processing',
};

function cardOf(attempt: DepositAttempt): string {
  const brand = attempt.cardBrand ? titleCase(attempt.cardBrand) : titleCase(attempt.paymentMethod || 'card');
  return attempt.cardLast4 ? `${brand} •••• ${attempt.cardLast4}` : brand;
}

function AttemptTimeline({ attempts }: { attempts: DepositAttempt[] }) {
  if (attempts.length === 0) return <Empty>No card attempts yet.</Empty>;
  return (
    <ol className="timeline" aria-label="Card attempts, newest first">
      {attempts.map((attempt) => (
        <li
          key={`${attempt.attemptedAt}-${attempt.status}-${attempt.paymentId}`}
          className={`timeline-item tone-${attempt.status}`}
        >
          <div className="timeline-head">
            <StatusBadge status={attempt.status} label={ATTEMPT_LABELS[attempt.status]} />
            <strong>{cardOf(attempt)}</strong>
            <time dateTime={attempt.attemptedAt}>{dateTime(attempt.attemptedAt)}</time>
          </div>
          {attempt.errorMessage ? <p className="attempt-error">{attempt.errorMessage}</p> : null}
          <p className="muted small attempt-reference">
            Provider reference <span className="mono">{attempt.paymentId}</span>
          </p>
        </li>
      ))}
    </ol>
  );
}

/** The payment's refunds, from the dashboard's refund list searched by the payment id. */
async function loadRefunds(payment: Payment, signal: AbortSignal): Promise<Refund[]> {
  const page = asPage(
    await api.get<Page<Refund> | Refund[]>(
      '/organization/refunds/',
      { search: payment.id, page_size: 100, environment: payment.environment },
      signal,
    ),
  );
  return (page?.results ?? []).filter((refund) => refund.transaction_id === payment.id);
}

function PaymentRefunds({ payment }: { payment: Payment }) {
  const [state, setState] = useState<{ refunds?: Refund[]; error?: unknown }>({});
  const [generation, setGeneration] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: reloads on generation by design.
  useEffect(() => {
    const controller = new AbortController();
    setState({});
    loadRefunds(payment, controller.signal).then(
      (refunds) => setState({ refunds }),
      (error: unknown) => {
        if (!controller.signal.aborted) setState({ error });
      },
    );
    return () => controller.abort();
  }, [payment.id, payment.environment, generation]);
  if (state.error) {
    return <ErrorNotice error={state.error} what="the refunds" onRetry={() => setGeneration((n) => n + 1)} />;
  }
  if (!state.refunds) return <Loading label="Loading refunds…" />;
  return state.refunds.length ? (
    <RefundsTable refunds={state.refunds} label="Refunds of this payment" showPayment={false} />
  ) : (
    <Empty>No refunds.</Empty>
  );
}

interface OutboxEvent {
  id: number;
  type: string;
  environment: string;
  subject: string | null;
  created_at: string;
  payload: { status?: string; depositAttempts?: unknown[] } & Record<string, unknown>;
}

/**
 * The events written for this payment (GET /organization/events/?subject=), newest first, each with
 * its webhook delivery when one was made (matched by event id in the delivery log).
 */
function PaymentEvents({ payment }: { payment: Payment }) {
  const events = useApi<{ results: OutboxEvent[] }>('/organization/events/', {
    subject: payment.id,
    environment: payment.environment,
    limit: 100,
  });
  const deliveries = useApi<Page<Delivery> | Delivery[]>('/organization/webhook/deliveries/', {
    event: 'transaction.status_changed',
    page_size: 100,
  });
  if (events.error) return <ErrorNotice error={events.error} what="the events" onRetry={events.reload} />;
  if (!events.data) return <Loading label="Loading events…" />;
  const list = [...events.data.results].reverse();
  if (list.length === 0) return <Empty>No events for this payment yet.</Empty>;
  const byEvent = new Map<number, Delivery>();
  for (const delivery of asPage(deliveries.data)?.results ?? []) {
    const eventId = Number(delivery.event_id);
    if (!byEvent.has(eventId)) byEvent.set(eventId, delivery);
  }
  return (
    <DataTable
      label="Events for this payment"
      caption="Events for this payment, newest first"
      columns={['Event', 'Payment status', 'Attempts', 'Webhook delivery', 'Created']}
      numeric={['Attempts']}
    >
      {list.map((event) => {
        const delivery = byEvent.get(event.id);
        return (
          <tr key={event.id}>
            <td className="mono">{event.type}</td>
            <td>{event.payload.status ? <StatusBadge status={event.payload.status} /> : '—'}</td>
            <td className="num">
              {Array.isArray(event.payload.depositAttempts) ? event.payload.depositAttempts.length : '—'}
            </td>
            <td>
              {delivery ? (
                <Link to={`developers/deliveries?id=${encodeURIComponent(String(delivery.id))}`}>
                  <StatusBadge status={delivery.status} />
                  <span className="visually-hidden"> delivery details</span>
                </Link>
              ) : (
                <span className="muted">{deliveries.data ? 'Not sent' : '—'}</span>
              )}
            </td>
            <td>{dateTime(event.created_at)}</td>
          </tr>
        );
      })}
    </DataTable>
  );
}

/** The link a payment came through, by name (its id until the name is loaded, or if it cannot be). */
function PaymentLinkName({ id }: { id: string }) {
  const link = useApi<PaymentLink>(`/payment-links/${encodeURIComponent(id)}/`);
  return <Link to={`links/${id}`}>{link.data?.name ?? id}</Link>;
}

/** Said when the payment belongs to the other environment than the one the dashboard shows. */
function EnvironmentNote({ payment }: { payment: Payment }) {
  const shown = useEnvironment();
  if (!payment.environment || payment.environment === shown) return null;
  return (
    <p className="notice notice-info">
      {payment.environment === 'sandbox'
        ? 'This is a test-mode (sandbox) payment; test mode is off.'
        : 'This is a production payment; you are in test mode.'}
    </p>
  );
}

export function PaymentDetailPage({ id }: { id: string }) {
  useTitle(`Payment ${id}`);
  const payment = useApi<Payment>(`/payments/${encodeURIComponent(id)}/`);
  const [generation, setGeneration] = useState(0);
  const [refunded, setRefunded] = useState<RefundCreated | null>(null);
  const [resent, setResent] = useState(false);
  const resend = useAction(() =>
    api.post<unknown>('/organization/webhook/test-transaction/', { transaction_id: id }).then(() => true),
  );
  const data = payment.data;

  function onRefunded(refund: RefundCreated) {
    setRefunded(refund);
    payment.reload();
    setGeneration((n) => n + 1);
  }

  const fee = data ? feeOf(data) : undefined;
  return (
    <>
      <p className="breadcrumb">
        <Link to="payments">← Payments</Link>
      </p>
      <PageHeader title={`Payment ${id}`}>
        {data && REFUNDABLE.has(data.status) ? <RefundButton payment={data} onRefunded={onRefunded} /> : null}
        {data ? (
          <button
            type="button"
            className="button secondary"
            disabled={resend.pending}
            onClick={async () => setResent(Boolean(await resend.run()))}
          >
            {resend.pending ? 'Sending…' : 'Resend webhook'}
          </button>
        ) : null}
      </PageHeader>
      {refunded ? (
        <Success>
          Refund RF{refunded.refund_public_id} of {money(refunded.amount, refunded.currency)} is{' '}
          {refunded.status}.
        </Success>
      ) : null}
      {resent ? <Success>The payment's transaction.status_changed webhook was queued again.</Success> : null}
      <FormError message={resend.error} />
      <ResourceState resource={payment} what="this payment" loading="Loading the payment…" />
      {data ? <EnvironmentNote payment={data} /> : null}
      {data ? (
        <>
          <ProviderReviewNotice review={data.provider_review} />
          <section aria-labelledby="amounts-heading" className="card">
            <h2 id="amounts-heading">
              {money(data.amount, data.currency)} <StatusBadge status={data.status} />
            </h2>
            <Detail
              items={[
                ['Amount charged (TTC)', money(data.amount, data.currency)],
                [
                  'Fee',
                  <>
                    {fee !== undefined ? money(fee, data.currency) : '—'}
                    {data.fee_percent !== undefined ? ` (${data.fee_percent} %)` : ''}
                  </>,
                ],
                ['Net to you', data.net_amount !== undefined ? money(data.net_amount, data.currency) : '—'],
                ['Net in USD', data.amount_breakdown ? money(data.amount_breakdown.net_usd, 'USD') : '—'],
                ...(data.refunded_amount !== undefined
                  ? ([['Refunded', money(data.refunded_amount, data.currency)]] as [string, string][])
                  : []),
                ...(data.refundable_amount !== undefined
                  ? ([['Refundable', money(data.refundable_amount, data.currency)]] as [string, string][])
                  : []),
              ]}
            />
          </section>
          <section aria-labelledby="details-heading" className="card">
            <h2 id="details-heading">Details</h2>
            <Detail
              items={[
                ['Customer', data.payer_email ?? '—'],
                [
                  'Products',
                  data.products?.length ? data.products.map((product) => product.name).join(', ') : '—',
                ],
                [
                  'Environment',
                  data.environment
                    ? titleCase(data.environment)
                    : data.livemode === false
                      ? 'Sandbox'
                      : 'Production',
                ],
                [
                  'Order',
                  <span key="order" className="mono">
                    {data.order_id ?? data.checkout_id ?? '—'}
                  </span>,
                ],
                [
                  'Payment link',
                  data.payment_link_id ? <PaymentLinkName key="link" id={data.payment_link_id} /> : 'None',
                ],
                ['Created', dateTime(data.created_at)],
                ['Updated', dateTime(data.updated_at)],
              ]}
            />
          </section>
          <section aria-labelledby="attempts-heading">
            <h2 id="attempts-heading">Card attempts</h2>
            <AttemptTimeline attempts={data.depositAttempts ?? []} />
          </section>
          <section aria-labelledby="refunds-heading">
            <h2 id="refunds-heading">Refunds</h2>
            <PaymentRefunds payment={data} key={generation} />
          </section>
          <section aria-labelledby="events-heading">
            <h2 id="events-heading">Events and webhooks</h2>
            <PaymentEvents payment={data} key={generation} />
          </section>
        </>
      ) : null}
    </>
  );
}
