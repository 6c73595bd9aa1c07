// Small shared pieces: page heading, loading/empty/error states, badges, copy, dialogs, pagination,
// tables, form fields and form footers.
import { type ReactNode, useEffect, useId, useRef, useState } from 'react';
import { ApiError, errorText } from './api.ts';
import { titleCase } from './format.ts';
import type { Action, Resource } from './hooks.ts';
import type { Currency } from './types.ts';

export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <header className="page-head">
      <h1 id="page-title" tabIndex={-1}>
        {title}
      </h1>
      {children ? <div className="page-actions">{children}</div> : null}
    </header>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <p className="loading" role="status">
      <span className="spinner" aria-hidden="true" />
      {label}
    </p>
  );
}

/** A failed load: the server's detail (a 404 says what was not found) and Retry. */
export function ErrorNotice({
  error,
  what,
  onRetry,
}: {
  error: unknown;
  what?: string;
  onRetry?: () => void;
}) {
  return (
    <div className="notice notice-error" role="alert">
      <p>
        {what ? <strong>Could not load {what}. </strong> : null}
        {errorText(error)}
        {error instanceof ApiError && error.status >= 500 ? ` (HTTP ${error.status})` : ''}
      </p>
      {onRetry ? (
        <button type="button" className="button secondary small" onClick={onRetry}>
          Retry
        </button>
      ) : null}
    </div>
  );
}

/**
 * A resource's state before its data: its error (with Retry) and, until the first answer, a loading
 * line ("Loading {what}…" unless `loading` says otherwise).
 */
export function ResourceState({
  resource,
  what,
  loading = `Loading ${what}…`,
}: {
  resource: Resource<unknown>;
  what: string;
  loading?: string;
}) {
  return (
    <>
      {resource.error ? <ErrorNotice error={resource.error} what={what} onRetry={resource.reload} /> : null}
      {!resource.data && resource.loading ? <Loading label={loading} /> : null}
    </>
  );
}

/** A failed action's message: a notice (under a form), or `inline` in a row of actions. */
export function FormError({ message, inline = false }: { message: string | null; inline?: boolean }) {
  if (!message) return null;
  if (inline) {
    return (
      <span className="field-error" role="alert">
        {message}
      </span>
    );
  }
  return (
    <p className="notice notice-error form-error" role="alert">
      {message}
    </p>
  );
}

/**
 * Activate or Deactivate (a product, a link): runs `toggle`, then `onChanged`. `name` completes the
 * label for screen readers.
 */
export function ActiveToggle({
  active,
  toggle,
  onChanged,
  name,
}: {
  active: boolean;
  toggle: Action<[], unknown>;
  onChanged: () => void;
  name?: string;
}) {
  return (
    <button
      type="button"
      className="button secondary small"
      disabled={toggle.pending}
      onClick={async () => {
        if (await toggle.run()) onChanged();
      }}
    >
      {active ? 'Deactivate' : 'Activate'}
      {name ? <span className="visually-hidden"> {name}</span> : null}
    </button>
  );
}

export function Success({ children }: { children: ReactNode }) {
  return (
    <div className="notice notice-success" role="status">
      {children}
    </div>
  );
}

/** One figure in a row of cards (`<ul className="cards">`), with an optional note under it. */
export function Stat({ label, value, note }: { label: string; value: ReactNode; note?: string }) {
  return (
    <li className="card stat">
      <span className="stat-label">{label}</span>
      <span className="stat-value">{value}</span>
      {note ? <span className="muted small">{note}</span> : null}
    </li>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="empty">{children}</div>;
}

const GOOD = /^(paid|completed|succeeded|success|active|delivered|ok|settlement|reserve_release|true)$/;
const BAD =
  /^(failed|rejected|canceled|cancelled|revoked|declined|requires_payment_method|deleted|expired|exhausted|error|false|dead)$/;
const WARN = /^(processing|pending|refund_pending|retrying|scheduled|in_progress|inactive)$/;

/** A status as a coloured badge; `label` replaces the status's own words (a decline, not "Requires payment method"). */
export function StatusBadge({ status, label }: { status: string | null | undefined; label?: string }) {
  const value = status ?? 'unknown';
  const tone = GOOD.test(value) ? 'good' : BAD.test(value) ? 'bad' : WARN.test(value) ? 'warn' : 'neutral';
  return <span className={`badge badge-${tone}`}>{label ?? titleCase(value)}</span>;
}

async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // fall through to the selection-based copy
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.append(area);
  area.select();
  let copied = false;
  try {
    copied = document.execCommand('copy');
  } catch {
    copied = false;
  }
  area.remove();
  return copied;
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (state === 'idle') return;
    const timer = window.setTimeout(() => setState('idle'), 2000);
    return () => window.clearTimeout(timer);
  }, [state]);
  return (
    <button
      type="button"
      className="button secondary small"
      onClick={async () => setState((await copyText(text)) ? 'copied' : 'failed')}
    >
      {label}
      <span className="visually-hidden" aria-live="polite">
        {state === 'copied' ? ' copied to the clipboard' : state === 'failed' ? ' could not be copied' : ''}
      </span>
      {state === 'copied' ? <span aria-hidden="true"> ✓</span> : null}
    </button>
  );
}

/** A secret the server shows once (raw API key, webhook secret), with copy and a warning. */
export function OneTimeSecret({
  title,
  value,
  onDismiss,
}: {
  title: string;
  value: string;
  onDismiss: () => void;
}) {
  const ref = useRef<HTMLElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <section className="notice notice-secret" aria-label={title} tabIndex={-1} ref={ref}>
      <p>
        <strong>{title}</strong> It is shown only once: copy it now and store it safely.
      </p>
      <div className="secret-row">
        <code className="secret" data-testid="one-time-secret">
          {value}
        </code>
        <CopyButton text={value} />
      </div>
      <button type="button" className="button secondary small" onClick={onDismiss}>
        I have saved it
      </button>
    </section>
  );
}

export function TableScroll({
  label,
  fit = false,
  children,
}: {
  label: string;
  /** Let every cell wrap, so a wide table fits its column instead of scrolling. */
  fit?: boolean;
  children: ReactNode;
}) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be reachable by keyboard.
    <section className={fit ? 'table-scroll fit' : 'table-scroll'} aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}

/** A scrollable table with a hidden caption (the label unless `caption` is given) and its header row. */
export function DataTable({
  label,
  caption = label,
  columns,
  numeric = [],
  fit = false,
  children,
}: {
  label: string;
  caption?: string;
  /** See TableScroll. */
  fit?: boolean;
  /** Column headings; `false` leaves a column out. */
  columns: (string | false)[];
  /** The headings of the right-aligned (number) columns. */
  numeric?: string[];
  children: ReactNode;
}) {
  return (
    <TableScroll label={label} fit={fit}>
      <table>
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((column) =>
              column === false ? null : (
                <th key={column} scope="col" className={numeric.includes(column) ? 'num' : undefined}>
                  {column}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>{children}</tbody>
      </table>
    </TableScroll>
  );
}

/** An option of a select or a radio group: its value and label, or one string for both. */
export type Choice = string | readonly [value: string, label: string];

function choiceOf(choice: Choice): readonly [string, string] {
  return typeof choice === 'string' ? [choice, choice] : choice;
}

/** A labelled select (uncontrolled); `any` puts an "Any" option with the empty value first. */
export function SelectField({
  label,
  name,
  value,
  choices,
  any = false,
}: {
  label: string;
  name: string;
  value: string;
  choices: readonly Choice[];
  any?: boolean;
}) {
  return (
    <label className="field">
      <span>{label}</span>
      <select name={name} defaultValue={value}>
        {any ? <option value="">Any</option> : null}
        {choices.map((choice) => {
          const [optionValue, optionLabel] = choiceOf(choice);
          return (
            <option key={optionValue} value={optionValue}>
              {optionLabel}
            </option>
          );
        })}
      </select>
    </label>
  );
}

export const CURRENCIES: readonly Currency[] = ['USD', 'EUR'];

export function CurrencyField({ value, any = false }: { value: string; any?: boolean }) {
  return <SelectField label="Currency" name="currency" value={value} choices={CURRENCIES} any={any} />;
}

/** Segmented radio buttons (uncontrolled), `value` checked at first; `onChange` is told each choice. */
export function RadioGroup({
  legend,
  name,
  value,
  choices,
  onChange,
}: {
  legend: string;
  name: string;
  value: string;
  choices: readonly Choice[];
  onChange?: (value: string) => void;
}) {
  return (
    <fieldset className="segmented">
      <legend>{legend}</legend>
      {choices.map((choice) => {
        const [optionValue, optionLabel] = choiceOf(choice);
        return (
          <label key={optionValue}>
            <input
              type="radio"
              name={name}
              value={optionValue}
              defaultChecked={optionValue === value}
              onChange={onChange ? () => onChange(optionValue) : undefined}
            />
            <span>{optionLabel}</span>
          </label>
        );
      })}
    </fieldset>
  );
}

/**
 * The end of a form: the last failure, then the action button (showing `pendingLabel` while it runs;
 * a submit button unless `onClick` is given) and Cancel when `onCancel` is given.
 */
export function FormFooter({
  state,
  label,
  pendingLabel,
  danger = false,
  onClick,
  onCancel,
}: {
  state: { pending: boolean; error: string | null };
  label: string;
  pendingLabel: string;
  danger?: boolean;
  onClick?: () => void;
  onCancel?: () => void;
}) {
  return (
    <>
      <FormError message={state.error} />
      <div className="form-actions">
        <button
          type={onClick ? 'button' : 'submit'}
          className={danger ? 'button danger' : 'button'}
          disabled={state.pending}
          onClick={onClick}
        >
          {state.pending ? pendingLabel : label}
        </button>
        {onCancel ? (
          <button type="button" className="button secondary" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </>
  );
}

export function Pagination({
  page,
  pageSize,
  count,
  onPage,
}: {
  page: number;
  pageSize: number;
  count: number;
  onPage: (page: number) => void;
}) {
  const pages = Math.max(1, Math.ceil(count / pageSize));
  if (count <= pageSize && page === 1) {
    return <p className="muted pagination-summary">{count === 1 ? '1 result' : `${count} results`}</p>;
  }
  return (
    <nav className="pagination" aria-label="Pagination">
      <button
        type="button"
        className="button secondary small"
        disabled={page <= 1}
        onClick={() => onPage(page - 1)}
      >
        Previous
      </button>
      <span aria-live="polite">
        Page {page} of {pages} · {count} results
      </span>
      <button
        type="button"
        className="button secondary small"
        disabled={page >= pages}
        onClick={() => onPage(page + 1)}
      >
        Next
      </button>
    </nav>
  );
}

/** A modal dialog (native <dialog>: focus stays inside, Escape closes, focus returns on close). */
export function Dialog({
  open,
  title,
  onClose,
  children,
}: {
  open: boolean;
  title: string;
  onClose: () => void;
  children: ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  return (
    <dialog ref={ref} className="dialog" aria-labelledby={titleId} onClose={onClose}>
      {open ? (
        <>
          <div className="dialog-head">
            <h2 id={titleId}>{title}</h2>
            <button type="button" className="icon-button" aria-label="Close" onClick={onClose}>
              ×
            </button>
          </div>
          {children}
        </>
      ) : null}
    </dialog>
  );
}

/** Asks before a destructive action; `onConfirm` runs it, and its error is shown in the dialog. */
export function ConfirmButton({
  label,
  title,
  message,
  confirmLabel,
  onConfirm,
  className = 'button danger small',
}: {
  label: string;
  title: string;
  message: ReactNode;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  className?: string;
}) {
  const [open, setOpen] = useState(false);
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  return (
    <>
      <button type="button" className={className} onClick={() => setOpen(true)}>
        {label}
      </button>
      <Dialog open={open} title={title} onClose={() => setOpen(false)}>
        <div className="dialog-body">{message}</div>
        <FormFooter
          state={{ pending, error }}
          label={confirmLabel}
          pendingLabel="Working…"
          danger
          onClick={async () => {
            setPending(true);
            setError(null);
            try {
              await onConfirm();
              setOpen(false);
            } catch (caught) {
              setError(errorText(caught));
            } finally {
              setPending(false);
            }
          }}
          onCancel={() => setOpen(false)}
        />
      </Dialog>
    </>
  );
}

export function Detail({ items }: { items: [string, ReactNode][] }) {
  return (
    <dl className="details">
      {items.map(([term, value]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}
