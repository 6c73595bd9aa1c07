// Shared by the hosted pages. The page builder wraps this file and the page's own script in one
// strict function, so nothing here becomes a global (what looks unused here is used there).
// Nothing is stored in the browser and nothing is logged: card data exists only in the form
// fields and in the body of the pay request.

// biome-ignore-all lint/correctness/noUnusedVariables: the page scripts use these helpers.

const $ = (id) => document.getElementById(id);

/** The path segment after the page prefix (/checkout/{token}, /pay/{id}), or '' when there is none. */
function pathParameter() {
  const part = location.pathname.split('/')[2] || '';
  try {
    return decodeURIComponent(part);
  } catch {
    return '';
  }
}

/** One JSON call to the API. Never throws: a network failure is status 0. */
async function api(method, path, body) {
  const init = { method, credentials: 'omit', cache: 'no-store', headers: { accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  try {
    const response = await fetch(path, init);
    let data = null;
    try {
      data = await response.json();
    } catch {
      data = null;
    }
    const retryAfter = Number(response.headers.get('retry-after')) || 0;
    return { status: response.status, data: data || {}, retryAfter };
  } catch {
    return { status: 0, data: {}, retryAfter: 0 };
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Shows one screen (a <section data-screen>) and hides the others. */
function showScreen(name) {
  for (const section of document.querySelectorAll('[data-screen]')) {
    section.hidden = section.dataset.screen !== name;
  }
}

function text(id, value) {
  const element = $(id);
  element.textContent = value;
  return element;
}

/** An http(s) address to send the customer to, or null (never a javascript: or data: URL). */
function safeUrl(value) {
  if (typeof value !== 'string' || value === '') return null;
  try {
    const url = new URL(value, location.href);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

/** Formats a decimal string such as "12.50" exactly (Intl formats strings without going through floats). */
function money(amount, currency) {
  if (amount === undefined || amount === null || amount === '') return '';
  try {
    return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(String(amount));
  } catch {
    return `${amount} ${currency || ''}`.trim();
  }
}

/**
 * The result screen: an icon, a title, a sentence, and optionally a redirect to the merchant.
 * kind is success | failed | canceled | pending | gone | notfound | error.
 */
function showResult(kind, title, message, redirectUrl) {
  const icon = $('result-icon');
  icon.className = `icon ${kind}`;
  icon.textContent =
    { success: '✓', failed: '!', canceled: '×', gone: '!', notfound: '?', error: '!' }[kind] || '';
  text('result-title', title);
  text('result-message', message);
  const target = safeUrl(redirectUrl);
  const go = $('result-continue');
  go.hidden = !target;
  if (target) {
    go.href = target;
    text('result-redirect', `Returning you to ${new URL(target).host}…`).hidden = false;
    setTimeout(() => location.replace(target), 1500);
  } else {
    $('result-redirect').hidden = true;
  }
  showScreen('result');
  document.title = title;
  $('result-title').focus();
}

/** Shows `message` in the alert `id`, or hides the alert when there is none. */
function showAlert(id, message) {
  const alert = text(id, message || '');
  alert.hidden = !message;
}

/** Marks a field invalid with its message (or valid with null); returns whether it is valid. */
function fieldError(input, message) {
  const error = $(`${input.id}-error`);
  error.textContent = message || '';
  error.hidden = !message;
  if (message) input.setAttribute('aria-invalid', 'true');
  else input.removeAttribute('aria-invalid');
  return !message;
}

/** Validates each field with its check on blur (once filled) and clears the message while typing. */
function watchFields(checks) {
  for (const [id, check] of Object.entries(checks)) {
    const input = $(id);
    input.addEventListener('blur', () => {
      if (input.value.trim() !== '') fieldError(input, check(input.value));
    });
    input.addEventListener('input', () => {
      if (input.getAttribute('aria-invalid')) fieldError(input, null);
    });
  }
}

/** Runs every check; shows the messages; focuses the first invalid field. Returns whether all pass. */
function validateAll(checks) {
  let first = null;
  for (const [id, check] of Object.entries(checks)) {
    const input = $(id);
    if (!fieldError(input, check(input.value)) && !first) first = input;
  }
  if (first) first.focus();
  return !first;
}

/** Fills the order summary list and total from [{name, quantity, amount}] lines. */
function renderLines(listId, lines, currency) {
  const list = $(listId);
  list.replaceChildren();
  for (const line of lines) {
    const item = document.createElement('li');
    const name = document.createElement('span');
    name.textContent = line.name;
    if (line.quantity > 1) {
      const qty = document.createElement('span');
      qty.className = 'qty';
      qty.textContent = ` × ${line.quantity}`;
      name.append(qty);
    }
    const amount = document.createElement('span');
    amount.textContent = money(line.amount, currency);
    item.append(name, amount);
    list.append(item);
  }
}

// ---- The billing form of the payment-link and signup pages (shared.html#billing-form): checked as the
// customer types, then sent to `startPath`, whose checkout the page goes on to.

const BILLING_FIELDS = {
  billing_first_name: (value) => (value.trim() ? null : 'Enter your first name.'),
  billing_last_name: (value) => (value.trim() ? null : 'Enter your last name.'),
  billing_email: (value) => {
    if (!value.trim()) return 'Enter your email address.';
    return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value.trim()) ? null : 'Enter a valid email address.';
  },
  billing_country: (value) =>
    /^[A-Za-z]{2}$/.test(value.trim()) ? null : 'Enter your country as a two-letter code, such as US.',
  billing_postal_code: () => null,
  billing_phone: (value) =>
    value.trim() === '' || /^\+?[\d\s().-]{4,32}$/.test(value.trim()) ? null : 'Enter a valid phone number.',
};

/**
 * Wires the billing form: `startPath()` is where it posts, `label()` the button's text, `unavailable(kind,
 * detail)` shows a 404 or 410, and `failure` is the sentence for an unexpected answer.
 */
function billingForm({ startPath, label, unavailable, failure }) {
  let starting = false;
  const startError = (message) => showAlert('start-error', message);
  async function start(event) {
    event.preventDefault();
    if (starting) return;
    startError(null);
    if (!validateAll(BILLING_FIELDS)) return;
    const body = {};
    for (const id of Object.keys(BILLING_FIELDS)) {
      const value = $(id).value.trim();
      if (value !== '') body[id] = id === 'billing_country' ? value.toUpperCase() : value;
    }
    starting = true;
    $('start-button').disabled = true;
    text('start-button', 'Starting…');
    const response = await api('POST', startPath(), body);
    const target =
      response.status === 201 || response.status === 200 ? safeUrl(response.data.checkout_url) : null;
    if (target) return location.assign(target);
    starting = false;
    $('start-button').disabled = false;
    text('start-button', label());
    if (response.status === 404) return unavailable('notfound');
    if (response.status === 410) return unavailable('gone', response.data.detail);
    if (response.status === 429) return startError('Too many attempts. Wait a moment, then try again.');
    if (response.status === 400)
      return startError(response.data.detail || 'Check your details and try again.');
    startError(failure);
  }
  watchFields(BILLING_FIELDS);
  $('billing-form').addEventListener('submit', start);
}
