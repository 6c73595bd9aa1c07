// The payment-link page, /pay/{id}: what the link sells, a short billing form, then on to checkout.

const linkId = pathParameter();
const linkBase = `/api/payment-links/public/${encodeURIComponent(linkId)}/`;
let starting = false;

const FIELDS = {
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

function unavailable(kind, detail) {
  if (kind === 'notfound') {
    return showResult(
      'notfound',
      'Payment link not found',
      'Check the address, or ask the merchant for a new link.',
    );
  }
  showResult(
    'gone',
    'This payment link is no longer available',
    detail || 'Ask the merchant for a new link.',
  );
}

function renderLink(data) {
  const currency = data.currency || 'USD';
  const merchant = (data.merchant && data.merchant.name) || 'Payment';
  text('merchant', merchant);
  document.title = `Pay ${merchant}`;
  const lines = (data.products || []).map((line) => ({
    name: line.name,
    quantity: line.quantity || 1,
    amount: line.amount || line.unit_price,
  }));
  renderLines('items', lines, currency);
  const totals = data.totals || {};
  text('total', money(totals.gross, currency));
  const hasTax = totals.tax !== undefined && totals.tax !== null && Number(totals.tax) !== 0;
  $('subtotal-row').hidden = !hasTax;
  $('tax-row').hidden = !hasTax;
  if (hasTax) {
    text('subtotal', money(totals.subtotal, currency));
    text('tax', money(totals.tax, currency));
  }
  showScreen('link');
}

async function load() {
  if (!/^[0-9A-Za-z-]{8,64}$/.test(linkId)) return unavailable('notfound');
  const response = await api('GET', linkBase);
  if (response.status === 404) return unavailable('notfound');
  if (response.status === 410) return unavailable('gone', response.data.detail);
  if (response.status !== 200) {
    return showResult('error', 'Something went wrong', 'We could not load this page. Reload to try again.');
  }
  renderLink(response.data);
}

function startError(message) {
  const alert = text('start-error', message || '');
  alert.hidden = !message;
}

async function start(event) {
  event.preventDefault();
  if (starting) return;
  startError(null);
  if (!validateAll(FIELDS)) return;
  const body = {};
  for (const id of Object.keys(FIELDS)) {
    const value = $(id).value.trim();
    if (value !== '') body[id] = id === 'billing_country' ? value.toUpperCase() : value;
  }
  starting = true;
  $('start-button').disabled = true;
  text('start-button', 'Starting…');
  const response = await api('POST', `${linkBase}start/`, body);
  const target =
    response.status === 201 || response.status === 200 ? safeUrl(response.data.checkout_url) : null;
  if (target) return location.assign(target);
  starting = false;
  $('start-button').disabled = false;
  text('start-button', 'Continue to payment');
  if (response.status === 404) return unavailable('notfound');
  if (response.status === 410) return unavailable('gone', response.data.detail);
  if (response.status === 429) return startError('Too many attempts. Wait a moment, then try again.');
  if (response.status === 400) return startError(response.data.detail || 'Check your details and try again.');
  startError('We could not start the payment. Check your connection and try again.');
}

watchFields(FIELDS);
$('billing-form').addEventListener('submit', start);
load();
