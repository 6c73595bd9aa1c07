// The webhook delivery log (with each delivery's attempts and redelivery) and the test receiver's inbox.
import { useState } from 'react';
import { api, asPage, type Page } from '../api.ts';
import { FilterBar, listFilters, PagedList, StatusFilter } from '../filters.tsx';
import { dateTime } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link, setQuery, useRoute } from '../router.tsx';
import { useEnvironment } from '../test-mode.tsx';
import type { Delivery, DeliveryAttempt, ReceivedWebhook } from '../types.ts';
import {
  CopyButton,
  DataTable,
  Empty,
  ErrorNotice,
  FormError,
  Loading,
  ResourceState,
  SelectField,
  StatusBadge,
  Success,
} from '../ui.tsx';

const EVENTS = [
  'transaction.status_changed',
  'refund.status_changed',
  'payout.status_changed',
  'webhook.test',
];
const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'];
const FILTERS = ['status', 'event'] as const;

function pretty(text: string | undefined | null): string {
  if (!text) return '';
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function subjectLink(subject: unknown) {
  if (typeof subject !== 'string' || !subject) return '—';
  if (subject.startsWith('TX'))
    return (
      <Link to={`payments/${subject}`} className="mono">
        {subject}
      </Link>
    );
  return <span className="mono">{subject}</span>;
}

function DeliveryDetail({ id, onRedelivered }: { id: string; onRedelivered: () => void }) {
  const delivery = useApi<Delivery>(`/organization/webhook/deliveries/${encodeURIComponent(id)}/`);
  const redeliver = useAction(() =>
    api.post<Delivery>(`/organization/webhook/deliveries/${encodeURIComponent(id)}/redeliver/`),
  );
  const [redelivered, setRedelivered] = useState<Delivery | null>(null);
  if (delivery.error)
    return <ErrorNotice error={delivery.error} what="the delivery" onRetry={delivery.reload} />;
  const data = delivery.data;
  if (!data) return <Loading label="Loading the delivery…" />;
  const attempts = Array.isArray(data.attempts) ? (data.attempts as DeliveryAttempt[]) : [];
  // The detail's payload is null only when the delivery's event no longer exists: redeliver/ answers 409
  // for it (docs/webhooks.md), so the button is disabled and says why instead of offering that error.
  const eventless = data.payload === null;
  return (
    <div className="delivery-detail">
      <h3>Delivery {String(data.id)}</h3>
      {redelivered ? <Success>Redelivery {String(redelivered.id)} was queued.</Success> : null}
      <div className="actions">
        <button
          type="button"
          className="button secondary small"
          disabled={redeliver.pending || eventless}
          aria-describedby={eventless ? 'redeliver-unavailable' : undefined}
          onClick={async () => {
            const created = await redeliver.run();
            if (created) {
              setRedelivered(created);
              onRedelivered();
            }
          }}
        >
          {redeliver.pending ? 'Queuing…' : 'Redeliver'}
        </button>
        <button type="button" className="button secondary small" onClick={delivery.reload}>
          Refresh
        </button>
      </div>
      {eventless ? (
        <p id="redeliver-unavailable" className="muted small">
          The event of this delivery no longer exists, so it cannot be redelivered.
        </p>
      ) : null}
      <FormError message={redeliver.error} />
      <h4>Attempts</h4>
      {attempts.length === 0 ? (
        <Empty>No attempts yet.</Empty>
      ) : (
        <DataTable
          label="Delivery attempts"
          columns={['#', 'Time', 'Response', 'Duration', 'Error']}
          numeric={['Duration']}
        >
          {attempts.map((attempt, index) => (
            <tr key={String(attempt.attempt ?? index)}>
              <td>{String(attempt.attempt ?? index + 1)}</td>
              <td>{dateTime(attempt.attempted_at ?? attempt.created_at)}</td>
              <td>{attempt.response_status ?? attempt.status_code ?? '—'}</td>
              <td className="num">{attempt.duration_ms != null ? `${attempt.duration_ms} ms` : '—'}</td>
              <td className="wrap">{attempt.error ?? '—'}</td>
            </tr>
          ))}
        </DataTable>
      )}
      {data.payload !== undefined && data.payload !== null ? (
        <details>
          <summary>Payload</summary>
          <pre className="code">{JSON.stringify(data.payload, null, 2)}</pre>
        </details>
      ) : null}
    </div>
  );
}

export function DeliveriesTab() {
  const route = useRoute();
  const list = listFilters('developers/deliveries', route.query, FILTERS);
  const { page, filters, filtered } = list;
  const { status, event } = filters;
  const open = route.query.get('id') ?? '';
  const environment = useEnvironment();
  const deliveries = useApi<Page<Delivery> | Delivery[]>('/organization/webhook/deliveries/', {
    page,
    page_size: 20,
    status,
    event,
    environment,
  });
  const base = { status, event, page: page > 1 ? String(page) : undefined };

  return (
    <section aria-labelledby="deliveries-heading">
      <h2 id="deliveries-heading">Deliveries</h2>
      {environment === 'sandbox' ? (
        <p className="muted small">
          Showing the deliveries of sandbox events. webhook.test is a production event: turn test mode off to
          see it.
        </p>
      ) : null}
      <FilterBar
        list={list}
        label="Filter deliveries"
        clearable={false}
        key={`${status}|${event}`}
        actions={
          <button type="button" className="button secondary" onClick={deliveries.reload}>
            Refresh
          </button>
        }
      >
        <StatusFilter value={status} statuses={DELIVERY_STATUSES} />
        <SelectField label="Event" name="event" value={event} choices={EVENTS} any />
      </FilterBar>
      <PagedList
        list={list}
        resource={deliveries}
        what="deliveries"
        pageSize={20}
        empty={`No deliveries${filtered ? ' match these filters' : ' yet. Set an endpoint and send a test'}.`}
      >
        {(results) => (
          <DataTable
            label="Webhook deliveries"
            columns={['Event', 'About', 'Status', 'Attempts', 'Last response', 'Created', 'Details']}
            numeric={['Attempts']}
            fit
          >
            {results.map((delivery) => {
              const id = String(delivery.id);
              const expanded = open === id;
              return (
                <tr key={id} className={expanded ? 'selected' : undefined}>
                  <td className="mono">{delivery.event}</td>
                  <td>{subjectLink(delivery.subject)}</td>
                  <td>
                    <StatusBadge status={delivery.status} />
                    {delivery.next_attempt_at ? (
                      <span className="muted small block">next {dateTime(delivery.next_attempt_at)}</span>
                    ) : null}
                  </td>
                  <td className="num">
                    {delivery.attempt_count ??
                      (Array.isArray(delivery.attempts) ? delivery.attempts.length : '—')}
                  </td>
                  <td>{delivery.last_response_status ?? '—'}</td>
                  <td>{dateTime(delivery.created_at)}</td>
                  <td>
                    <button
                      type="button"
                      className="button secondary small"
                      aria-expanded={expanded}
                      onClick={() =>
                        setQuery('developers/deliveries', { ...base, id: expanded ? undefined : id })
                      }
                    >
                      {expanded ? 'Hide' : 'Show'}
                      <span className="visually-hidden"> delivery {id}</span>
                    </button>
                  </td>
                </tr>
              );
            })}
          </DataTable>
        )}
      </PagedList>
      {open ? <DeliveryDetail key={open} id={open} onRedelivered={deliveries.reload} /> : null}
    </section>
  );
}

function ReceivedItem({ item }: { item: ReceivedWebhook }) {
  const body = typeof item.body === 'string' ? item.body : (item.raw_body ?? '');
  const event = typeof item.event === 'string' ? item.event : item.headers?.['x-webhook-event'];
  return (
    <li className="received">
      <div className="received-head">
        <strong className="mono">{event ?? 'request'}</strong>
        {item.signature_valid === true ? <span className="badge badge-good">Signature valid</span> : null}
        {item.signature_valid === false ? <span className="badge badge-bad">Signature invalid</span> : null}
        {item.signature_valid == null ? <span className="badge badge-neutral">Not signed</span> : null}
        <time dateTime={item.received_at ?? item.created_at}>
          {dateTime(item.received_at ?? item.created_at)}
        </time>
      </div>
      <details>
        <summary>Headers and body</summary>
        <pre className="code">
          {Object.entries(item.headers ?? {})
            .map(([name, value]) => `${name}: ${value}`)
            .join('\n')}
        </pre>
        <pre className="code">{item.body_encoding === 'base64' ? body : pretty(body)}</pre>
      </details>
    </li>
  );
}

export function ReceiverTab({ url }: { url: string }) {
  const received = useApi<Page<ReceivedWebhook> | ReceivedWebhook[]>('/organization/webhook/received/', {
    page_size: 50,
  });
  const data = asPage(received.data);
  return (
    <section aria-labelledby="receiver-heading">
      <h2 id="receiver-heading">Test receiver</h2>
      <p>
        A public URL that accepts any POST and keeps the last 100 requests, so you can see exactly what Kassa
        sends:
      </p>
      <p className="secret-row">
        <code>{url}</code>
        <CopyButton text={url} label="Copy URL" />
      </p>
      <p className="muted small">
        Set it as your endpoint under <Link to="developers/webhook">Webhook</Link>.
      </p>
      <div className="actions">
        <button type="button" className="button secondary small" onClick={received.reload}>
          Refresh
        </button>
      </div>
      <ResourceState resource={received} what="received requests" />
      {data && data.results.length === 0 ? <Empty>Nothing received yet.</Empty> : null}
      {data && data.results.length > 0 ? (
        <ul className="received-list" aria-label="Received requests" aria-busy={received.loading}>
          {data.results.map((item, index) => (
            <ReceivedItem key={String(item.id ?? index)} item={item} />
          ))}
        </ul>
      ) : null}
    </section>
  );
}
