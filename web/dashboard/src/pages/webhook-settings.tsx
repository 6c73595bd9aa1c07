// Developers → Webhook: the endpoint (and why nothing is delivered to it, when the server says so), the
// signing secret with its rotation (and how long the replaced secret keeps verifying), and the test sends.
import { type FormEvent, useId, useRef, useState } from 'react';
import { api } from '../api.ts';
import { dateTime } from '../format.ts';
import { useAction, useApi } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { Session, WebhookConfig } from '../types.ts';
import {
  ConfirmButton,
  FormError,
  FormFooter,
  OneTimeSecret,
  RadioGroup,
  ResourceState,
  Success,
} from '../ui.tsx';

export function receiverUrl(session: Session): string {
  return `${window.location.origin}/api/v1/webhooks/${session.organization.slug}/`;
}

/** `url` without its user name and password; null when it has neither (or is not a URL). */
function withoutCredentials(url: string | null | undefined): string | null {
  if (!url) return null;
  try {
    const parsed = new URL(url);
    if (!parsed.username && !parsed.password) return null;
    parsed.username = '';
    parsed.password = '';
    return parsed.href;
  } catch {
    return null;
  }
}

/**
 * The server's endpoint_problem: nothing is sent to the stored URL. For a URL stored with credentials
 * (before they were refused), what is wrong in the merchant's words and a button that fills the field
 * with the URL without them; for any other problem, the server's words.
 */
function EndpointProblem({
  id,
  problem,
  storedUrl,
  onUseUrl,
}: {
  id: string;
  problem: string;
  storedUrl: string | null;
  onUseUrl: (url: string) => void;
}) {
  const fixed = withoutCredentials(storedUrl);
  return (
    <div className="notice notice-error" role="alert" id={id}>
      <p>
        <strong>Webhooks are not being delivered. </strong>
        {fixed ? (
          <>
            The endpoint URL contains a user name and password (<code>user:password@</code>), which Kassa does
            not send, so no delivery is sent to it. Deliveries wait and are retried on their usual schedule.
          </>
        ) : (
          problem
        )}
      </p>
      <p>
        <strong>What to do: </strong>
        {fixed ? (
          <>
            set the endpoint URL again without the user name and password, and save it. Have your receiver
            check Kassa's signature (the signing secret below) instead of a password.
          </>
        ) : (
          <>set a new endpoint URL below and save it.</>
        )}{' '}
        Deliveries still waiting then go out at their next retry; those that already failed can be sent again
        from <Link to="developers/deliveries">Deliveries</Link>.
      </p>
      {fixed ? (
        <button type="button" className="button secondary small" onClick={() => onUseUrl(fixed)}>
          Remove the user name and password from the URL
        </button>
      ) : null}
    </div>
  );
}

/** How long the replaced secret keeps signing webhook-signature: previous_secret_expires_in, seconds. */
const OVERLAPS: [string, string][] = [
  ['0', 'None'],
  ['3600', '1 hour'],
  ['86400', '24 hours'],
  ['604800', '7 days'],
];

function overlapLabel(seconds: string): string {
  return OVERLAPS.find(([value]) => value === seconds)?.[1] ?? `${seconds} seconds`;
}

/** What a rotation with `overlap` seconds does, shown in the dialog as the choice changes. */
function RotationEffect({ overlap, overlapping }: { overlap: string; overlapping: boolean }) {
  return (
    <div aria-live="polite">
      {overlap === '0' ? (
        <p>
          Only the new secret verifies deliveries from now on: update your receiver right away. Choose this if
          the current secret may have leaked.
        </p>
      ) : (
        <p>
          For {overlapLabel(overlap)}, every delivery's <code>webhook-signature</code> header (Standard
          Webhooks) is signed with both the new and the current secret, so your receiver keeps accepting
          deliveries while you deploy the new secret. <code>X-Webhook-Signature</code> carries the new
          secret's signature only.
        </p>
      )}
      {overlapping ? (
        <p className="muted">
          The secret an earlier rotation replaced stops verifying now: only one previous secret is kept.
        </p>
      ) : null}
    </div>
  );
}

function SigningSecret({
  data,
  onRotated,
}: {
  data: WebhookConfig;
  onRotated: (rotated: WebhookConfig) => void;
}) {
  const [overlap, setOverlap] = useState('0');
  const expiresAt = data.previous_secret_expires_at ?? null;
  return (
    <section className="card" aria-labelledby="secret-heading">
      <h2 id="secret-heading">Signing secret</h2>
      {data.secret_preview ? (
        <p>
          Current secret: <code>{data.secret_preview}</code>
        </p>
      ) : (
        <p className="muted">The secret is created when you first save an endpoint.</p>
      )}
      {expiresAt ? (
        <p>
          The previous secret also verifies deliveries (their <code>webhook-signature</code> header) until{' '}
          <time dateTime={expiresAt}>{dateTime(expiresAt)}</time>. After that, only the current secret does.
        </p>
      ) : null}
      {data.endpoint_url ? (
        <ConfirmButton
          label="Rotate secret"
          className="button secondary"
          title="Rotate the signing secret?"
          message={
            <>
              <p>A new secret replaces the current one. It is shown once.</p>
              <RadioGroup
                legend="The current secret keeps verifying for"
                name="previous_secret_expires_in"
                value={overlap}
                choices={OVERLAPS}
                onChange={setOverlap}
              />
              <RotationEffect overlap={overlap} overlapping={expiresAt !== null} />
            </>
          }
          confirmLabel="Rotate secret"
          onConfirm={async () => {
            const rotated = await api.post<WebhookConfig>('/organization/webhook/rotate/', {
              previous_secret_expires_in: Number(overlap),
            });
            setOverlap('0');
            onRotated(rotated);
          }}
        />
      ) : null}
    </section>
  );
}

export function WebhookTab({ session }: { session: Session }) {
  const config = useApi<WebhookConfig>('/organization/webhook/');
  const [url, setUrl] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const urlField = useRef<HTMLInputElement>(null);
  const problemId = useId();
  const save = useAction((endpoint: string) =>
    api.put<WebhookConfig>('/organization/webhook/', { endpoint_url: endpoint }),
  );
  const test = useAction(() => api.post<{ delivery_id?: string }>('/organization/webhook/test/'));
  const resend = useAction((transaction: string) =>
    api.post<{ delivery_id?: string; transaction_id?: string }>(
      '/organization/webhook/test-transaction/',
      transaction ? { transaction_id: transaction } : {},
    ),
  );
  const data = config.data;
  const current = url ?? data?.endpoint_url ?? '';
  const receiver = receiverUrl(session);
  const problem = data?.endpoint_problem ?? null;

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const saved = await save.run(current.trim());
    if (saved) {
      if (saved.raw_secret) setSecret(saved.raw_secret);
      setNotice('The webhook endpoint was saved.');
      setUrl(null);
      config.reload();
    }
  }

  function fillUrl(value: string) {
    setUrl(value);
    urlField.current?.focus();
  }

  return (
    <>
      {secret ? (
        <OneTimeSecret
          title="Your webhook signing secret."
          value={secret}
          onDismiss={() => setSecret(null)}
        />
      ) : null}
      {notice ? <Success>{notice}</Success> : null}
      <ResourceState resource={config} what="the webhook settings" />
      {data ? (
        <>
          <section className="card" aria-labelledby="endpoint-heading">
            <h2 id="endpoint-heading">Endpoint</h2>
            {problem ? (
              <EndpointProblem
                id={problemId}
                problem={problem}
                storedUrl={data.endpoint_url}
                onUseUrl={fillUrl}
              />
            ) : null}
            <p className="muted">
              Kassa POSTs signed JSON events here: the Standard Webhooks headers (
              <code>webhook-signature</code>) and <code>X-Webhook-Signature: sha256=…</code> (HMAC-SHA256 of
              the raw body with your secret).
            </p>
            <form className="stack" onSubmit={submit}>
              <label className="field">
                <span>Endpoint URL</span>
                <input
                  ref={urlField}
                  name="endpoint_url"
                  type="url"
                  required
                  maxLength={2048}
                  placeholder="https://example.com/webhooks/kassa"
                  value={current}
                  aria-invalid={problem && url === null ? true : undefined}
                  aria-describedby={problem ? problemId : undefined}
                  onChange={(event) => setUrl(event.target.value)}
                />
              </label>
              <p className="small">
                Trying it out?{' '}
                <button type="button" className="link-button" onClick={() => setUrl(receiver)}>
                  Use the built-in test receiver
                </button>{' '}
                and watch requests arrive under <Link to="developers/receiver">Test receiver</Link>.
              </p>
              <FormFooter state={save} label="Save endpoint" pendingLabel="Saving…" />
            </form>
          </section>
          <SigningSecret
            data={data}
            onRotated={(rotated) => {
              if (rotated.raw_secret) setSecret(rotated.raw_secret);
              setNotice(
                rotated.previous_secret_expires_at
                  ? `The secret was rotated. The previous secret keeps verifying webhook-signature until ${dateTime(rotated.previous_secret_expires_at)}.`
                  : 'The secret was rotated. Only the new secret verifies deliveries from now on.',
              );
              config.reload();
            }}
          />
          <section className="card" aria-labelledby="test-heading">
            <h2 id="test-heading">Send a test</h2>
            <div className="actions">
              <button
                type="button"
                className="button secondary"
                disabled={test.pending || !data.endpoint_url}
                onClick={async () => {
                  const sent = await test.run();
                  if (sent) setNotice('A webhook.test event was queued. Follow it under Deliveries.');
                }}
              >
                {test.pending ? 'Sending…' : 'Send webhook.test'}
              </button>
            </div>
            <FormError message={test.error} />
            <form
              className="row align-end"
              onSubmit={async (event) => {
                event.preventDefault();
                const form = new FormData(event.currentTarget);
                const sent = await resend.run(String(form.get('transaction_id') ?? '').trim());
                if (sent) {
                  setNotice(
                    `transaction.status_changed${sent.transaction_id ? ` for ${sent.transaction_id}` : ''} was queued.`,
                  );
                }
              }}
            >
              <label className="field grow">
                <span>Payment ID (empty: the latest payment)</span>
                <input name="transaction_id" className="mono" placeholder="TX…" />
              </label>
              <button
                type="submit"
                className="button secondary"
                disabled={resend.pending || !data.endpoint_url}
              >
                {resend.pending ? 'Sending…' : 'Resend payment event'}
              </button>
            </form>
            <FormError message={resend.error} />
            {!data.endpoint_url ? <p className="muted small">Save an endpoint first.</p> : null}
          </section>
        </>
      ) : null}
    </>
  );
}
