// Stripe's request bodies and query strings: form encoding with bracketed keys (metadata[a]=b,
// expand[0]=x, automatic_payment_methods[enabled]=true), read back into nested objects.
export type FormValue = string | FormObject;
export interface FormObject {
  [key: string]: FormValue;
}

export function parseForm(text: string): FormObject {
  const root: FormObject = {};
  for (const [rawKey, value] of new URLSearchParams(text)) {
    const parts = rawKey.replace(/\]/g, '').split('[');
    let node = root;
    for (const [index, part] of parts.entries()) {
      if (index === parts.length - 1) {
        node[part] = value;
      } else {
        const child = node[part];
        node[part] = typeof child === 'object' ? child : {};
        node = node[part] as FormObject;
      }
    }
  }
  return root;
}

export function text(form: FormObject, key: string): string | undefined {
  const value = form[key];
  return typeof value === 'string' ? value : undefined;
}

export function record(form: FormObject, key: string): Record<string, string> {
  const value = form[key];
  if (typeof value !== 'object') return {};
  return Object.fromEntries(
    Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

/** A canonical form of parameters, to tell "the same parameters" for idempotency (key order aside). */
export function canonical(form: FormObject): string {
  const sorted = (value: FormValue): unknown =>
    typeof value === 'string'
      ? value
      : Object.fromEntries(
          Object.keys(value)
            .sort()
            .map((key) => [key, sorted(value[key])]),
        );
  return JSON.stringify(sorted(form));
}
