// Developers: API keys, the webhook endpoint (webhook-settings.tsx), the delivery log and the test
// receiver's inbox (webhook-logs.tsx).
import { type FormEvent, useState } from 'react';
import { api, asPage, type Page } from '../api.ts';
import { dateTime, titleCase } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import { Link } from '../router.tsx';
import type { ApiKey, Session } from '../types.ts';
import {
  ConfirmButton,
  DataTable,
  Empty,
  FormFooter,
  OneTimeSecret,
  PageHeader,
  RadioGroup,
  ResourceState,
  StatusBadge,
} from '../ui.tsx';
import { DeliveriesTab, ReceiverTab } from './webhook-logs.tsx';
import { receiverUrl, WebhookTab } from './webhook-settings.tsx';

const SCOPES: [string, string][] = [
  ['checkout:create', 'Create checkouts'],
  ['payments:read', 'Read payments and refunds'],
  ['payments:write', 'Create refunds (alias)'],
  ['refunds:read', 'Read refunds'],
  ['refunds:write', 'Create refunds'],
];

const ENVIRONMENTS: [string, string][] = [
  ['production', 'Production'],
  ['sandbox', 'Sandbox'],
];

const TABS: [string, string][] = [
  ['keys', 'API keys'],
  ['webhook', 'Webhook'],
  ['deliveries', 'Deliveries'],
  ['receiver', 'Test receiver'],
];

function KeyRow({
  apiKey,
  onChanged,
  onRotated,
}: {
  apiKey: ApiKey;
  onChanged: () => void;
  onRotated: (key: ApiKey) => void;
}) {
  return (
    <tr>
      <td>
        <strong>{apiKey.name}</strong>
        <span className="muted small block">
          {titleCase(apiKey.environment)} · <span className="mono">{apiKey.prefix}…</span>
        </span>
      </td>
      <td className="scopes">{apiKey.scopes.length ? apiKey.scopes.join(', ') : 'All scopes'}</td>
      <td>
        <StatusBadge status={apiKey.status} />
      </td>
      <td className="small">
        <span className="block">Created {dateTime(apiKey.created_at)}</span>
        <span className="block muted">
          {apiKey.last_used_at ? `Last used ${dateTime(apiKey.last_used_at)}` : 'Never used'}
        </span>
      </td>
      <td>
        {apiKey.status === 'active' ? (
          <div className="actions">
            <ConfirmButton
              label="Rotate"
              className="button secondary small"
              title={`Rotate the ${apiKey.environment} key?`}
              message={
                <p>
                  A new key with the same name and scopes replaces{' '}
                  <span className="mono">{apiKey.prefix}…</span>, which stops working at once.
                </p>
              }
              confirmLabel="Rotate key"
              onConfirm={async () => {
                onRotated(
                  await api.post<ApiKey>('/organization/api-keys/rotate/', {
                    environment: apiKey.environment,
                  }),
                );
              }}
            />
            <ConfirmButton
              label="Revoke"
              title={`Revoke ${apiKey.name}?`}
              message={<p>Requests made with this key will be refused from now on.</p>}
              confirmLabel="Revoke key"
              onConfirm={async () => {
                await api.post(`/organization/api-keys/${apiKey.id}/revoke/`);
                onChanged();
              }}
            />
          </div>
        ) : (
          <span className="muted">Revoked {dateTime(apiKey.revoked_at)}</span>
        )}
      </td>
    </tr>
  );
}

function KeysTab() {
  const keys = useApi<ApiKey[] | Page<ApiKey>>('/organization/api-keys/');
  const create = useAction((body: Record<string, unknown>) =>
    api.post<ApiKey>('/organization/api-keys/', body),
  );
  const [secret, setSecret] = useState<{ title: string; value: string } | null>(null);
  const list = asPage(keys.data)?.results;

  function showKey(key: ApiKey, verb: string) {
    if (key.raw_key)
      setSecret({ title: `${verb} ${key.environment} key “${key.name}”.`, value: key.raw_key });
    keys.reload();
  }

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const key = await create.run({
      name: String(form.get('name') ?? '').trim(),
      environment: String(form.get('environment') ?? 'production'),
      allowed_scopes: form.getAll('scopes').map(String).join(' '),
    });
    if (key) {
      formElement.reset();
      showKey(key, 'Created the');
    }
  }

  return (
    <>
      {secret ? (
        <OneTimeSecret title={secret.title} value={secret.value} onDismiss={() => setSecret(null)} />
      ) : null}
      <section aria-labelledby="keys-heading">
        <h2 id="keys-heading">API keys</h2>
        <p className="muted">
          Server integrations send <code>Authorization: Api-Key &lt;key&gt;</code>. Sandbox keys work on{' '}
          <code>/sandbox/api/</code>. Each environment has one active key; rotate it to replace it.
        </p>
        <ResourceState resource={keys} what="API keys" />
        {list && list.length === 0 ? <Empty>No API keys yet. Create one below.</Empty> : null}
        {list && list.length > 0 ? (
          <DataTable label="All API keys" columns={['Key', 'Scopes', 'Status', 'Used', 'Actions']} fit>
            {list.map((key) => (
              <KeyRow
                key={key.id}
                apiKey={key}
                onChanged={keys.reload}
                onRotated={(rotated) => showKey(rotated, 'Rotated the')}
              />
            ))}
          </DataTable>
        ) : null}
      </section>
      <section className="card" aria-labelledby="new-key-heading">
        <h2 id="new-key-heading">New API key</h2>
        <form className="stack" onSubmit={submit}>
          <label className="field">
            <span>Name</span>
            <input name="name" required maxLength={100} placeholder="Shop backend" />
          </label>
          <RadioGroup legend="Environment" name="environment" value="production" choices={ENVIRONMENTS} />
          <fieldset className="checks">
            <legend>Scopes (none selected: all scopes)</legend>
            {SCOPES.map(([scope, label]) => (
              <label className="checkbox" key={scope}>
                <input type="checkbox" name="scopes" value={scope} />
                <span>
                  <code>{scope}</code> {label}
                </span>
              </label>
            ))}
          </fieldset>
          <FormFooter state={create} label="Create key" pendingLabel="Creating…" />
        </form>
      </section>
    </>
  );
}

export function DevelopersPage({ tab, session }: { tab: string; session: Session }) {
  useTitle(`Developers · ${TABS.find(([id]) => id === tab)?.[1] ?? 'Not found'}`);
  return (
    <>
      <PageHeader title="Developers" />
      <nav className="tabs" aria-label="Developer sections">
        {TABS.map(([id, label]) => (
          <Link
            key={id}
            to={id === 'keys' ? 'developers' : `developers/${id}`}
            aria-current={tab === id ? 'page' : undefined}
          >
            {label}
          </Link>
        ))}
      </nav>
      {tab === 'keys' ? <KeysTab /> : null}
      {tab === 'webhook' ? <WebhookTab session={session} /> : null}
      {tab === 'deliveries' ? <DeliveriesTab /> : null}
      {tab === 'receiver' ? <ReceiverTab url={receiverUrl(session)} /> : null}
      {!TABS.some(([id]) => id === tab) ? <Empty>There is no such section.</Empty> : null}
    </>
  );
}
