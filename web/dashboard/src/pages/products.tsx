// Catalog products: GET/POST /api/products/, PATCH/DELETE /api/products/{id}/.
import { type FormEvent, useState } from 'react';
import { api, asPage, type Page } from '../api.ts';
import { dateTime, money } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import type { Product } from '../types.ts';
import {
  ActiveToggle,
  ConfirmButton,
  CurrencyField,
  DataTable,
  Dialog,
  Empty,
  FormError,
  FormFooter,
  PageHeader,
  ResourceState,
  StatusBadge,
  Success,
} from '../ui.tsx';

const PRICE = '^\\d+(\\.\\d{1,2})?$';

function ProductFields({ product }: { product?: Product }) {
  return (
    <>
      <label className="field">
        <span>Name</span>
        <input name="name" required maxLength={200} defaultValue={product?.name} />
      </label>
      <label className="field">
        <span>Description (optional)</span>
        <textarea name="description" maxLength={2000} rows={2} defaultValue={product?.description} />
      </label>
      <div className="row">
        <label className="field">
          <span>Unit price</span>
          <input
            name="unit_price"
            required
            inputMode="decimal"
            pattern={PRICE}
            title="An amount like 25 or 25.00"
            defaultValue={product?.unit_price}
          />
        </label>
        <CurrencyField value={product?.currency ?? 'USD'} />
      </div>
    </>
  );
}

function fieldsOf(form: FormData) {
  return {
    name: String(form.get('name') ?? '').trim(),
    description: String(form.get('description') ?? '').trim(),
    unit_price: String(form.get('unit_price') ?? '').trim(),
    currency: String(form.get('currency') ?? 'USD'),
  };
}

function EditProduct({ product, onSaved }: { product: Product; onSaved: () => void }) {
  const [open, setOpen] = useState(false);
  const save = useAction((body: Record<string, unknown>) =>
    api.patch<Product>(`/products/${product.id}/`, body),
  );
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (await save.run(fieldsOf(new FormData(event.currentTarget)))) {
      setOpen(false);
      onSaved();
    }
  }
  return (
    <>
      <button type="button" className="button secondary small" onClick={() => setOpen(true)}>
        Edit<span className="visually-hidden"> {product.name}</span>
      </button>
      <Dialog open={open} title={`Edit ${product.name}`} onClose={() => setOpen(false)}>
        <form className="stack" onSubmit={submit}>
          <ProductFields product={product} />
          <p className="muted small">Existing payment links keep the price they were created with.</p>
          <FormFooter state={save} label="Save" pendingLabel="Saving…" onCancel={() => setOpen(false)} />
        </form>
      </Dialog>
    </>
  );
}

function ProductRow({ product, onChanged }: { product: Product; onChanged: () => void }) {
  const toggle = useAction(() =>
    api.patch<Product>(`/products/${product.id}/`, { is_active: !product.is_active }),
  );
  return (
    <tr>
      <td>
        <strong>{product.name}</strong>
        {product.description ? <span className="muted small block">{product.description}</span> : null}
        <span className="muted mono small block">{product.id}</span>
      </td>
      <td className="num">{money(product.unit_price, product.currency)}</td>
      <td>
        <StatusBadge status={product.is_active ? 'active' : 'inactive'} />
      </td>
      <td>{dateTime(product.created_at)}</td>
      <td>
        <div className="actions">
          <EditProduct product={product} onSaved={onChanged} />
          <ActiveToggle
            active={product.is_active}
            toggle={toggle}
            onChanged={onChanged}
            name={product.name}
          />
          <ConfirmButton
            label="Delete"
            title={`Delete ${product.name}?`}
            message={<p>The product leaves the catalog. Payment links that include it keep working.</p>}
            confirmLabel="Delete product"
            onConfirm={async () => {
              await api.delete(`/products/${product.id}/`);
              onChanged();
            }}
          />
          <FormError message={toggle.error} inline />
        </div>
      </td>
    </tr>
  );
}

export function ProductsPage() {
  useTitle('Products');
  const products = useApi<Product[] | Page<Product>>('/products/');
  const create = useAction((body: Record<string, unknown>) => api.post<Product>('/products/', body));
  const [created, setCreated] = useState<Product | null>(null);
  const list = asPage(products.data)?.results;

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const formElement = event.currentTarget;
    const product = await create.run(fieldsOf(new FormData(formElement)));
    if (product) {
      formElement.reset();
      setCreated(product);
      products.reload();
    }
  }

  return (
    <>
      <PageHeader title="Products" />
      <section className="card" aria-labelledby="new-product-heading">
        <h2 id="new-product-heading">New product</h2>
        {created ? <Success>Product {created.name} was added to the catalog.</Success> : null}
        <form className="stack" onSubmit={submit}>
          <ProductFields />
          <FormFooter state={create} label="Add product" pendingLabel="Adding…" />
        </form>
      </section>
      <section aria-labelledby="catalog-heading">
        <h2 id="catalog-heading">Catalog</h2>
        <ResourceState resource={products} what="products" />
        {list && list.length === 0 ? <Empty>No products yet. Add the first one above.</Empty> : null}
        {list && list.length > 0 ? (
          <DataTable
            label="Products"
            columns={['Product', 'Price', 'Status', 'Created', 'Actions']}
            numeric={['Price']}
          >
            {list.map((product) => (
              <ProductRow key={product.id} product={product} onChanged={products.reload} />
            ))}
          </DataTable>
        ) : null}
      </section>
    </>
  );
}
