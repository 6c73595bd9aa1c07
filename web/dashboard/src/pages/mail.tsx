// Mail (development only): the messages Kassa wrote to the data directory because no mail server is
// configured, newest first, addressed to this organization's users. The server has this page's
// endpoints only in development; elsewhere the menu does not show it.
import { dateTime } from '../format.ts';
import { useApi, useTitle } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { MailMessage, MailSummary } from '../types.ts';
import { Detail, Empty, ErrorNotice, Loading, PageHeader, ResourceState } from '../ui.tsx';

function Message({ id }: { id: string }) {
  const message = useApi<MailMessage>(`/dev/mail/${encodeURIComponent(id)}/`);
  if (message.error) return <ErrorNotice error={message.error} what="the message" onRetry={message.reload} />;
  const data = message.data;
  if (!data) return <Loading label="Opening the message…" />;
  return (
    <article className="card mail-message" aria-labelledby="mail-subject">
      <h2 id="mail-subject">{data.subject || '(no subject)'}</h2>
      <Detail
        items={[
          ['From', data.from],
          ['To', data.to],
          ['Sent', dateTime(data.date)],
        ]}
      />
      <pre className="mail-text">{data.text}</pre>
    </article>
  );
}

export function MailPage({ query }: { query: URLSearchParams }) {
  useTitle('Mail');
  const open = query.get('id') ?? '';
  const mailbox = useApi<{ directory: string; results: MailSummary[] }>('/dev/mail/');
  const list = mailbox.data?.results;
  return (
    <>
      <PageHeader title="Mail">
        <button type="button" className="button secondary small" onClick={mailbox.reload}>
          Refresh
        </button>
      </PageHeader>
      <p className="notice notice-info">
        Development only: no mail server is configured, so Kassa writes each message to{' '}
        <code>{mailbox.data?.directory ?? 'the data directory'}</code> instead of sending it. Here are the
        ones for your team.
      </p>
      {open ? <Message key={open} id={open} /> : null}
      <ResourceState resource={mailbox} what="the mailbox" />
      {list && list.length === 0 ? (
        <Empty>No messages yet. Refund codes and other mail to your team will appear here.</Empty>
      ) : null}
      {list && list.length > 0 ? (
        <ul className="mail-list" aria-label="Messages, newest first">
          {list.map((mail) => (
            <li key={mail.id} className={mail.id === open ? 'selected' : undefined}>
              <Link
                to={`mail?id=${encodeURIComponent(mail.id)}`}
                aria-current={mail.id === open ? 'true' : undefined}
              >
                <strong>{mail.subject || '(no subject)'}</strong>
              </Link>
              <span className="muted small">
                To {mail.to} · {dateTime(mail.date)}
              </span>
              <span className="mail-preview">{mail.preview}</span>
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}

/** Whether this server keeps a development mailbox (its endpoint answers; elsewhere it is a 404). */
export function useDevMailbox(): boolean {
  return useApi<unknown>('/dev/mail/').data !== undefined;
}
