// Payment links: create from catalog products, list with stats, copy, deactivate, delete; a link's
// own page edits it and lists its payments.
import { type FormEvent, useState } from 'react';
import { api, asPage, type Page } from '../api.ts';
import { dateTime, isoToLocalInput, localInputToIso, money } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import { Link, navigate } from '../router.tsx';
import { useEnvironment } from '../test-mode.tsx';
import type { Currency, Payment, PaymentLink, Product } from '../types.ts';
import {
  ActiveToggle,
  type Choice,
  ConfirmButton,
  CopyButton,
  CURRENCIES,
  DataTable,
  Detail,
  Empty,
  ErrorNotice,
  FormError,
  FormFooter,
  Loading,
  PageHeader,
  ResourceState,
  SelectField,
  Stat,
  StatusBadge,
  Success,
} from '../ui.tsx';
import { PaymentsTable } from './payments.tsx';

interface Line {
  key: number;
  product_id: string;
  quantity: number;
}

let lineKeys = 0;

const PRICING: Choice[] = [
  ['', 'Organization default'],
  ['TAX_EXCLUSIVE', 'Exclude tax (HT)'],
  ['TAX_INCLUSIVE', 'Include tax (TTC)'],
];

function pricingLabel(mode: PaymentLink['pricing_mode']): string {
  return (PRICING.find(([value]) => value === mode) ?? PRICING[0])[1];
}

function CreateLinkForm({
  products,
  onCreated,
}: {
  products: Product[];
  onCreated: (link: PaymentLink) => void;
}) {
  const environment = useEnvironment();
  const active = products.filter((product) => product.is_active);
  const [currency, setCurrency] = useState<Currency>(() => active[0]?.currency ?? 'USD');
  // A link is priced in one currency: only the products priced in it can be picked.
  const sellable = active.filter((product) => product.currency === currency);
  const [lines, setLines] = useState<Line[]>(() => [
    { key: lineKeys++, product_id: sellable[0]?.id ?? '', quantity: 1 },
  ]);
  const create = useAction((body: Record<string, unknown>) => api.post<PaymentLink>('/payment-links/', body));

  if (active.length === 0) {
    return (
      <Empty>
        A payment link sells catalog products. <Link to="products">Create a product</Link> first.
      </Empty>
    );
  }

  function chooseCurrency(next: Currency) {
    setCurrency(next);
    const first = active.find((product) => product.currency === next)?.id ?? '';
    setLines([{ key: lineKeys++, product_id: first, quantity: 1 }]);
  }

  function update(key: number, change: Partial<Line>) {
    setLines((current) => current.map((line) => (line.key === key ? { ...line, ...change } : line)));
  }

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const formElement = event.currentTarget;
    const form = new FormData(formElement);
    const body: Record<string, unknown> = {
      name: String(form.get('name') ?? '').trim(),
      products: lines.map((line) => ({ product_id: line.product_id, quantity: line.quantity })),
      currency,
      environment,
    };
    const pricingMode = String(form.get('pricing_mode') ?? '');
    if (pricingMode) body.pricing_mode = pricingMode;
    const expires = localInputToIso(String(form.get('expires_at') ?? ''));
    if (expires) body.expires_at = expires;
    const maxUses = String(form.get('max_uses') ?? '').trim();
    if (maxUses) body.max_uses = Number(maxUses);
    const created = await create.run(body);
    if (created) {
      formElement.reset();
      setLines([{ key: lineKeys++, product_id: sellable[0]?.id ?? '', quantity: 1 }]);
      onCreated(created);
    }
  }

  return (
    <form className="stack" onSubmit={submit} aria-labelledby="new-link-heading">
      <label className="field">
        <span>Name (only you see it)</span>
        <input name="name" required maxLength={200} placeholder="Spring sale" />
      </label>
      <label className="field narrow-select">
        <span>Currency</span>
        <select value={currency} onChange={(event) => chooseCurrency(event.target.value as Currency)}>
          {CURRENCIES.map((code) => (
            <option key={code} value={code}>
              {code}
            </option>
          ))}
        </select>
      </label>
      <fieldset className="lines">
        <legend>Products in {currency}</legend>
        {sellable.length === 0 ? (
          <p className="muted">
            No active product is priced in {currency}. <Link to="products">Add one</Link> or pick another
            currency.
          </p>
        ) : null}
        {sellable.length > 0
          ? lines.map((line, index) => (
              <div className="line" key={line.key}>
                <label className="field grow">
                  <span>Product {index + 1}</span>
                  <select
                    value={line.product_id}
                    onChange={(event) => update(line.key, { product_id: event.target.value })}
                  >
                    {sellable.map((product) => (
                      <option key={product.id} value={product.id}>
                        {product.name} — {money(product.unit_price, product.currency)}
                      </option>
                    ))}
                  </select>
                </label>
                <label className="field narrow">
                  <span>Quantity</span>
                  <input
                    type="number"
                    min={1}
                    max={10000}
                    required
                    value={line.quantity}
                    onChange={(event) =>
                      update(line.key, { quantity: Math.max(1, Number(event.target.value) || 1) })
                    }
                  />
                </label>
                {lines.length > 1 ? (
                  <button
                    type="button"
                    className="button secondary small"
                    aria-label={`Remove product ${index + 1}`}
                    onClick={() => setLines((current) => current.filter((other) => other.key !== line.key))}
                  >
                    Remove
                  </button>
                ) : null}
              </div>
            ))
          : null}
        {sellable.length > 0 ? (
          <button
            type="button"
            className="button secondary small"
            onClick={() =>
              setLines((current) => [
                ...current,
                { key: lineKeys++, product_id: sellable[0].id, quantity: 1 },
              ])
            }
          >
            Add a product
          </button>
        ) : null}
      </fieldset>
      <div className="row">
        <SelectField label="Prices" name="pricing_mode" value="" choices={PRICING} />
        <label className="field">
          <span>Expires (optional)</span>
          <input name="expires_at" type="datetime-local" />
        </label>
        <label className="field">
          <span>Maximum uses (optional)</span>
          <input name="max_uses" type="number" min={1} inputMode="numeric" />
        </label>
      </div>
      {environment === 'sandbox' ? (
        <p className="muted small">
          Made in test mode: its checkouts are sandbox payments, paid with test cards.
        </p>
      ) : null}
      <FormFooter state={create} label="Create link" pendingLabel="Creating…" />
    </form>
  );
}

function usesText(link: PaymentLink): string {
  return link.max_uses ? `${link.uses_count} / ${link.max_uses}` : String(link.uses_count);
}

function setActive(link: PaymentLink, isActive: boolean) {
  return api.patch<PaymentLink>(`/payment-links/${link.id}/`, { is_active: isActive });
}

function LinkActions({ link, onChanged }: { link: PaymentLink; onChanged: () => void }) {
  const toggle = useAction(() => setActive(link, !link.is_active));
  return (
    <div className="actions">
      <CopyButton text={link.url} label="Copy link" />
      <a className="button secondary small" href={link.url} target="_blank" rel="noreferrer">
        Open<span className="visually-hidden"> {link.name} (new tab)</span>
      </a>
      {link.status !== 'deleted' ? (
        <ActiveToggle active={link.is_active} toggle={toggle} onChanged={onChanged} />
      ) : null}
      {link.status !== 'deleted' ? (
        <ConfirmButton
          label="Delete"
          title={`Delete “${link.name}”?`}
          message={
            <p>Customers who open this link will see that it is no longer available. Its history stays.</p>
          }
          confirmLabel="Delete link"
          onConfirm={async () => {
            await api.delete(`/payment-links/${link.id}/`);
            onChanged();
          }}
        />
      ) : null}
      <FormError message={toggle.error} inline />
    </div>
  );
}

export function LinksPage() {
  useTitle('Payment links');
  const environment = useEnvironment();
  const links = useApi<PaymentLink[] | Page<PaymentLink>>('/payment-links/', { environment });
  const products = useApi<Product[] | Page<Product>>('/products/');
  const [created, setCreated] = useState<PaymentLink | null>(null);
  const [showForm, setShowForm] = useState(false);
  const list = asPage(links.data)?.results;
  const catalog = asPage(products.data)?.results;

  return (
    <>
      <PageHeader title="Payment links">
        <button
          type="button"
          className="button"
          aria-expanded={showForm}
          onClick={() => setShowForm((open) => !open)}
        >
          {showForm ? 'Close the form' : 'New payment link'}
        </button>
      </PageHeader>
      {created ? (
        <Success>
          <p>
            Payment link <strong>{created.name}</strong> is ready: <a href={created.url}>{created.url}</a>{' '}
            <CopyButton text={created.url} label="Copy link" />
          </p>
        </Success>
      ) : null}
      {showForm ? (
        <section className="card" aria-labelledby="new-link-heading">
          <h2 id="new-link-heading">New payment link</h2>
          <ResourceState resource={products} what="products" />
          {catalog ? (
            <CreateLinkForm
              products={catalog}
              onCreated={(link) => {
                setCreated(link);
                setShowForm(false);
                links.reload();
              }}
            />
          ) : null}
        </section>
      ) : null}
      <ResourceState resource={links} what="payment links" />
      {list && list.length === 0 ? (
        <Empty>No payment links yet. Create one to sell your products with a shareable URL.</Empty>
      ) : null}
      {list && list.length > 0 ? (
        <DataTable
          label="Payment links"
          columns={['Name', 'Status', 'Products', 'Views', 'Uses', 'Paid', 'Revenue', 'Actions']}
          numeric={['Views', 'Uses', 'Paid', 'Revenue']}
        >
          {list.map((link) => (
            <tr key={link.id}>
              <td>
                <Link to={`links/${link.id}`}>{link.name}</Link>
              </td>
              <td>
                <StatusBadge status={link.status} />
              </td>
              <td className="wrap">
                {link.products.map((line) => `${line.quantity} × ${line.name}`).join(', ')}
              </td>
              <td className="num">{link.stats.views}</td>
              <td className="num">{usesText(link)}</td>
              <td className="num">{link.stats.payments_paid}</td>
              <td className="num">{money(link.stats.revenue, link.currency)}</td>
              <td>
                <LinkActions link={link} onChanged={links.reload} />
              </td>
            </tr>
          ))}
        </DataTable>
      ) : null}
    </>
  );
}

function EditLinkForm({ link, onSaved }: { link: PaymentLink; onSaved: (link: PaymentLink) => void }) {
  const save = useAction((body: Record<string, unknown>) =>
    api.patch<PaymentLink>(`/payment-links/${link.id}/`, body),
  );
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const maxUses = String(form.get('max_uses') ?? '').trim();
    const saved = await save.run({
      name: String(form.get('name') ?? '').trim(),
      is_active: form.get('is_active') === 'on',
      expires_at: localInputToIso(String(form.get('expires_at') ?? '')),
      max_uses: maxUses ? Number(maxUses) : null,
    });
    if (saved) onSaved(saved);
  }
  return (
    <form className="stack" onSubmit={submit} aria-labelledby="edit-link-heading" key={link.updated_at}>
      <label className="field">
        <span>Name</span>
        <input name="name" required maxLength={200} defaultValue={link.name} />
      </label>
      <label className="checkbox">
        <input type="checkbox" name="is_active" defaultChecked={link.is_active} />
        <span>Active (customers can pay through it)</span>
      </label>
      <div className="row">
        <label className="field">
          <span>Expires</span>
          <input name="expires_at" type="datetime-local" defaultValue={isoToLocalInput(link.expires_at)} />
        </label>
        <label className="field">
          <span>Maximum uses</span>
          <input name="max_uses" type="number" min={1} defaultValue={link.max_uses ?? ''} />
        </label>
      </div>
      <FormFooter state={save} label="Save changes" pendingLabel="Saving…" />
    </form>
  );
}

function LinkPayments({ id }: { id: string }) {
  const payments = useApi<Payment[] | Page<Payment>>(`/payment-links/${id}/payments/`);
  if (payments.error)
    return <ErrorNotice error={payments.error} what="the link's payments" onRetry={payments.reload} />;
  const list = asPage(payments.data)?.results;
  if (!list) return <Loading label="Loading payments…" />;
  if (list.length === 0) return <Empty>No payments through this link yet.</Empty>;
  return <PaymentsTable payments={list} label="Payments through this link" showCustomer={false} />;
}

export function LinkDetailPage({ id }: { id: string }) {
  const link = useApi<PaymentLink>(`/payment-links/${encodeURIComponent(id)}/`);
  const [saved, setSaved] = useState(false);
  const data = link.data;
  useTitle(data ? `Link ${data.name}` : 'Payment link');
  return (
    <>
      <p className="breadcrumb">
        <Link to="links">← Payment links</Link>
      </p>
      <PageHeader title={data ? data.name : 'Payment link'}>
        {data ? <StatusBadge status={data.status} /> : null}
      </PageHeader>
      <ResourceState resource={link} what="this payment link" loading="Loading the payment link…" />
      {data ? (
        <>
          <section className="card" aria-labelledby="link-url-heading">
            <h2 id="link-url-heading">Link</h2>
            <p className="secret-row">
              <a href={data.url} className="mono" target="_blank" rel="noreferrer">
                {data.url}
              </a>
              <CopyButton text={data.url} label="Copy link" />
            </p>
            <ul className="cards" aria-label="Link statistics">
              <Stat label="Views" value={data.stats.views} />
              <Stat label="Checkouts started" value={data.stats.checkouts_started} />
              <Stat label="Payments" value={data.stats.payments_paid} />
              <Stat label="Revenue" value={money(data.stats.revenue, data.currency)} />
            </ul>
            <Detail
              items={[
                [
                  'Products',
                  data.products
                    .map(
                      (line) => `${line.quantity} × ${line.name} (${money(line.unit_price, data.currency)})`,
                    )
                    .join(', '),
                ],
                ['Currency', data.currency],
                ['Environment', data.environment === 'sandbox' ? 'Test mode (sandbox)' : 'Production'],
                ['Prices', pricingLabel(data.pricing_mode)],
                ['Uses', usesText(data)],
                ['Expires', dateTime(data.expires_at)],
                ['Created', dateTime(data.created_at)],
              ]}
            />
          </section>
          {data.status !== 'deleted' ? (
            <section className="card" aria-labelledby="edit-link-heading">
              <h2 id="edit-link-heading">Edit</h2>
              {saved ? <Success>Saved.</Success> : null}
              <EditLinkForm
                link={data}
                onSaved={() => {
                  setSaved(true);
                  link.reload();
                }}
              />
              <ConfirmButton
                label="Delete this link"
                title={`Delete “${data.name}”?`}
                message={<p>Customers who open this link will see that it is no longer available.</p>}
                confirmLabel="Delete link"
                onConfirm={async () => {
                  await api.delete(`/payment-links/${data.id}/`);
                  navigate('links');
                }}
              />
            </section>
          ) : null}
          <section aria-labelledby="link-payments-heading">
            <h2 id="link-payments-heading">Payments</h2>
            <LinkPayments id={data.id} />
          </section>
        </>
      ) : null}
    </>
  );
}
