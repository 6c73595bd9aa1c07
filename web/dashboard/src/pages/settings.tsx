// Settings: the organization profile. A few fields are the merchant's to edit; the commercial
// settings are set by the operator and shown read-only.
import { type FormEvent, useState } from 'react';
import { api } from '../api.ts';
import { dateTime } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import type { Organization } from '../types.ts';
import { Detail, FormFooter, PageHeader, RadioGroup, ResourceState, StatusBadge, Success } from '../ui.tsx';

const EDITABLE = ['name', 'website', 'contact_email', 'telegram', 'price_mode'] as const;
const PRICE_MODES: [string, string][] = [
  ['TTC', 'Including tax (TTC)'],
  ['HT', 'Excluding tax (HT)'],
];

function ReadOnly({ organization }: { organization: Organization }) {
  const percent = (value: string) => `${value} %`;
  return (
    <Detail
      items={[
        [
          'Organization ID',
          <span key="id" className="mono">
            {organization.id}
          </span>,
        ],
        [
          'Slug',
          <span key="slug" className="mono">
            {organization.slug}
          </span>,
        ],
        ['Status', <StatusBadge key="status" status={organization.status} />],
        ['Fee', percent(organization.fee_percent)],
        ['Tax rate', percent(organization.tax_rate_percent)],
        [
          'Rolling reserve',
          `${percent(organization.rolling_reserve_percent)} for ${organization.rolling_reserve_days} days`,
        ],
        ['Minimum payment', organization.min_payment],
        ['Maximum payment', organization.max_payment],
        ['Active API keys per environment', String(organization.max_active_api_keys)],
        ['Created', dateTime(organization.created_at)],
      ]}
    />
  );
}

export function SettingsPage() {
  useTitle('Settings');
  const organization = useApi<Organization>('/organization/');
  const save = useAction((changes: Record<string, string>) =>
    api.patch<Organization>('/organization/', changes),
  );
  const [saved, setSaved] = useState(false);
  const data = organization.data;

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (!data) return;
    setSaved(false);
    const form = new FormData(event.currentTarget);
    const changes: Record<string, string> = {};
    for (const field of EDITABLE) {
      const value = String(form.get(field) ?? '').trim();
      if (value !== (data[field] ?? '')) changes[field] = value;
    }
    if (Object.keys(changes).length === 0) {
      setSaved(true);
      return;
    }
    if (await save.run(changes)) {
      setSaved(true);
      organization.reload();
    }
  }

  return (
    <>
      <PageHeader title="Settings" />
      <ResourceState resource={organization} what="the organization" loading="Loading…" />
      {data ? (
        <>
          <section className="card" aria-labelledby="profile-heading">
            <h2 id="profile-heading">Organization profile</h2>
            {saved ? <Success>Your changes were saved.</Success> : null}
            <form className="stack" onSubmit={submit} key={data.updated_at}>
              <label className="field">
                <span>Name</span>
                <input
                  name="name"
                  required
                  maxLength={200}
                  defaultValue={data.name}
                  autoComplete="organization"
                />
              </label>
              <label className="field">
                <span>Website</span>
                <input
                  name="website"
                  type="url"
                  maxLength={2048}
                  defaultValue={data.website}
                  placeholder="https://"
                  autoComplete="url"
                />
              </label>
              <label className="field">
                <span>Contact email</span>
                <input
                  name="contact_email"
                  type="email"
                  maxLength={254}
                  defaultValue={data.contact_email}
                  autoComplete="email"
                />
              </label>
              <label className="field">
                <span>Telegram</span>
                <input name="telegram" maxLength={100} defaultValue={data.telegram} placeholder="@yourshop" />
              </label>
              <RadioGroup
                legend="Catalog prices are entered"
                name="price_mode"
                value={data.price_mode}
                choices={PRICE_MODES}
              />
              <FormFooter state={save} label="Save changes" pendingLabel="Saving…" />
            </form>
          </section>
          <section className="card readonly" aria-labelledby="commercial-heading">
            <h2 id="commercial-heading">Commercial settings</h2>
            <p className="muted">
              Set by the operator of this Kassa installation. Contact them to change these.
            </p>
            <ReadOnly organization={data} />
          </section>
        </>
      ) : null}
    </>
  );
}
