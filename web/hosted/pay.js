// The payment-link page, /pay/{id}: what the link sells, a short billing form, then on to checkout.

const linkId = pathParameter();
const linkBase = `/api/payment-links/public/${encodeURIComponent(linkId)}/`;

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

billingForm({
  startPath: () => `${linkBase}start/`,
  label: () => 'Continue to payment',
  unavailable,
  failure: 'We could not start the payment. Check your connection and try again.',
});
load();
