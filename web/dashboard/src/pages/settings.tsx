// Settings: the organization profile. A few fields are the merchant's to edit; the commercial
// settings are set by the operator and shown read-only.
import { type FormEvent, useState } from 'react';
import { api } from '../api.ts';
import { dateTime } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import { useOrganization } from '../test-mode.tsx';
import type { Organization } from '../types.ts';
import { Detail, FormFooter, PageHeader, RadioGroup, ResourceState, StatusBadge, Success } from '../ui.tsx';

const EDITABLE = ['name', 'website', 'contact_email', 'telegram', 'price_mode', 'time_zone'] as const;
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

/** Every IANA zone the browser knows, UTC first. */
function timeZones(current: string): string[] {
  const known = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [];
  return [...new Set(['UTC', current, ...known])];
}

function TimeZoneField({ value }: { value: string }) {
  const [zone, setZone] = useState(value);
  const browser = Intl.DateTimeFormat().resolvedOptions().timeZone;
  return (
    <div className="field">
      <label className="field" htmlFor="time-zone">
        <span>Time zone</span>
      </label>
      <div className="row align-end">
        <select
          id="time-zone"
          name="time_zone"
          value={zone}
          onChange={(event) => setZone(event.target.value)}
          aria-describedby="time-zone-help"
        >
          {timeZones(value).map((name) => (
            <option key={name} value={name}>
              {name.replace(/_/g, ' ')}
            </option>
          ))}
        </select>
        {browser && browser !== zone ? (
          <button type="button" className="button secondary small" onClick={() => setZone(browser)}>
            Use {browser.replace(/_/g, ' ')}
          </button>
        ) : null}
      </div>
      <span id="time-zone-help" className="muted small">
        Every time in the dashboard is shown in this zone, with its name. Exports stay in UTC.
      </span>
    </div>
  );
}

export function SettingsPage() {
  useTitle('Settings');
  const organization = useApi<Organization>('/organization/');
  const { setOrganization } = useOrganization();
  const save = useAction((changes: Record<string, string>) =>
    api.patch<Organization>('/organization/', changes),
  );
  const [saved, setSaved] = useState(false);
  // The PATCH answers with the saved profile: shown at once (the form is keyed on updated_at), with no
  // reload racing the next edit.
  const [updated, setUpdated] = useState<Organization>();
  const data = updated ?? organization.data;

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
    const record = await save.run(changes);
    if (record) {
      setSaved(true);
      setUpdated(record);
      setOrganization(record);
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
              <TimeZoneField value={data.time_zone} />
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
