// Catalog products: GET/POST /api/products/, PATCH/DELETE /api/products/{id}/.
import { type FormEvent, useState } from 'react';
import { api, asPage, type Page } from '../api.ts';
import { dateTime, money } from '../format.ts';
import { useAction, useApi, useTitle } from '../hooks.ts';
import type { Product } from '../types.ts';
import {
  ConfirmButton,
  Dialog,
  Empty,
  ErrorNotice,
  FormError,
  Loading,
  PageHeader,
  StatusBadge,
  Success,
  TableScroll,
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
        <label className="field">
          <span>Currency</span>
          <select name="currency" defaultValue={product?.currency ?? 'USD'}>
            <option value="USD">USD</option>
            <option value="EUR">EUR</option>
          </select>
        </label>
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
          <FormError message={save.error} />
          <div className="form-actions">
            <button type="submit" className="button" disabled={save.pending}>
              {save.pending ? 'Saving…' : 'Save'}
            </button>
            <button type="button" className="button secondary" onClick={() => setOpen(false)}>
              Cancel
            </button>
          </div>
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
          <button
            type="button"
            className="button secondary small"
            disabled={toggle.pending}
            onClick={async () => {
              if (await toggle.run()) onChanged();
            }}
          >
            {product.is_active ? 'Deactivate' : 'Activate'}
            <span className="visually-hidden"> {product.name}</span>
          </button>
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
          {toggle.error ? (
            <span className="field-error" role="alert">
              {toggle.error}
            </span>
          ) : null}
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
          <FormError message={create.error} />
          <div className="form-actions">
            <button type="submit" className="button" disabled={create.pending}>
              {create.pending ? 'Adding…' : 'Add product'}
            </button>
          </div>
        </form>
      </section>
      <section aria-labelledby="catalog-heading">
        <h2 id="catalog-heading">Catalog</h2>
        {products.error ? (
          <ErrorNotice error={products.error} what="products" onRetry={products.reload} />
        ) : null}
        {!list && products.loading ? <Loading label="Loading products…" /> : null}
        {list && list.length === 0 ? <Empty>No products yet. Add the first one above.</Empty> : null}
        {list && list.length > 0 ? (
          <TableScroll label="Products">
            <table>
              <caption className="visually-hidden">Products</caption>
              <thead>
                <tr>
                  <th scope="col">Product</th>
                  <th scope="col" className="num">
                    Price
                  </th>
                  <th scope="col">Status</th>
                  <th scope="col">Created</th>
                  <th scope="col">Actions</th>
                </tr>
              </thead>
              <tbody>
                {list.map((product) => (
                  <ProductRow key={product.id} product={product} onChanged={products.reload} />
                ))}
              </tbody>
            </table>
          </TableScroll>
        ) : null}
      </section>
    </>
  );
}
