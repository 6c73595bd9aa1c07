// The hosted checkout page, /checkout/{token}: order summary, card form, and the outcome screens.
// The token comes from the page's own URL. With the simulator, card data goes only into the body of the
// pay request; with Stripe, the card is typed into Stripe's Payment Element and never reaches Kassa.

const token = pathParameter();
const base = `/api/checkout/${encodeURIComponent(token)}/`;
const POLL_MS = 1500;
let currency = 'USD';
let busy = false;
let payLabel = 'Pay';
/** Stripe redirects back to ?return=1 after a 3-D Secure step or a wallet: the status is asked first. */
let returned = new URLSearchParams(location.search).get('return') === '1';

const MESSAGES = {
  notfound: [
    'Checkout not found',
    'This payment page does not exist. Check the link, or ask the merchant for a new one.',
  ],
  gone: [
    'This checkout is no longer available',
    'It has expired or has already been completed. Ask the merchant for a new link if you still want to pay.',
  ],
  success: ['Payment successful', 'Thank you. Your payment has been received.'],
  failed: ['Payment failed', 'Your payment could not be completed and you have not been charged.'],
  canceled: ['Payment canceled', 'You canceled this payment. You have not been charged.'],
  error: [
    'Something went wrong',
    'We could not load this checkout. Check your connection and reload the page.',
  ],
};

/** The plan of a signup checkout (/subscribe/{plan id}), or null. */
let signup = null;

const UNITS = {
  day: ['day', 'days'],
  week: ['week', 'weeks'],
  month: ['month', 'months'],
  year: ['year', 'years'],
};

/** "every month", "every 3 months". */
function everyText(interval, count) {
  const [one, many] = UNITS[interval] || [interval, `${interval}s`];
  return count === 1 ? `every ${one}` : `every ${count} ${many}`;
}

function finish(kind, redirectUrl, message) {
  let [title, sentence] = MESSAGES[kind];
  if (signup && kind === 'success') {
    const price = `${money(signup.amount, signup.currency)} ${everyText(signup.interval, signup.interval_count)}`;
    title = signup.update_card ? 'Your card was updated' : 'You are subscribed';
    sentence = signup.update_card
      ? `Thank you. Your new card will be used for your ${signup.plan_name} subscription (${price}).`
      : signup.trial_days > 0
        ? `Your free trial has started. Your card was saved and will be charged ${price} when the trial ends.`
        : `Thank you. Your payment has been received and your subscription is active: ${price}.`;
  }
  showResult(kind, title, message || sentence, redirectUrl);
}

/** What a signup checkout says above the card form: what is charged today, and after. */
function renderSignup(data) {
  signup = data.subscription || null;
  $('subscription-terms').hidden = !signup;
  if (!signup) return;
  const price = money(signup.amount, signup.currency);
  const every = everyText(signup.interval, signup.interval_count);
  if (signup.update_card) {
    text(
      'subscription-terms',
      `Your ${signup.plan_name} subscription: ${price} ${every}. Nothing is charged now unless a payment is overdue.`,
    );
    text('total', money('0.00', signup.currency));
    text('total-label', 'Due today');
    text('form-title', 'Your new card');
    payLabel = 'Save card';
  } else if (signup.trial_days > 0) {
    const ends = new Date(Date.now() + signup.trial_days * 86_400_000).toLocaleDateString(undefined, {
      dateStyle: 'medium',
    });
    text(
      'subscription-terms',
      `Free for ${signup.trial_days} days: nothing is charged today. From ${ends}, ${price} ${every} until you cancel.`,
    );
    text('total', money('0.00', signup.currency));
    text('total-label', 'Due today');
    text('form-title', 'Save your card');
    payLabel = 'Start free trial';
  } else {
    text('subscription-terms', `Then ${price} ${every} until you cancel.`);
    text('form-title', 'Pay by card');
    payLabel = `Subscribe and pay ${money(data.total, currency)}`;
  }
  text('pay-button', payLabel);
}

// ---- Card checks: the customer sees a problem before anything is sent.

const digitsOf = (value) => value.replace(/[\s-]/g, '');

function luhnValid(digits) {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

/** {month, year} from "MM / YY", "MM/YYYY" or "MMYY"; null when it is not a date. */
function parseExpiry(value) {
  const match = /^(\d{1,2})\s*\/?\s*(\d{2}|\d{4})$/.exec(value.trim());
  if (!match) return null;
  const month = Number(match[1]);
  const year = match[2].length === 2 ? 2000 + Number(match[2]) : Number(match[2]);
  return month >= 1 && month <= 12 ? { month, year } : null;
}

const CHECKS = {
  cardholder_name: (value) => (value.trim() ? null : 'Enter the name shown on your card.'),
  card_number: (value) => {
    const digits = digitsOf(value);
    if (!digits) return 'Enter your card number.';
    if (!/^\d{12,19}$/.test(digits) || !luhnValid(digits)) return 'Your card number is not valid.';
    return null;
  },
  card_expiry: (value) => {
    if (!value.trim()) return 'Enter the expiry date.';
    const expiry = parseExpiry(value);
    if (!expiry) return 'Enter the expiry date as MM / YY.';
    const now = new Date();
    const current = now.getFullYear() * 12 + now.getMonth() + 1;
    if (expiry.year * 12 + expiry.month < current) return 'Your card has expired.';
    if (expiry.year > now.getFullYear() + 50) return 'Enter the expiry date as MM / YY.';
    return null;
  },
  card_cvc: (value) =>
    /^\d{3,4}$/.test(value.trim()) ? null : 'The security code is the 3 or 4 digits on your card.',
};

// ---- Input formatting: groups of four digits, and "MM / YY".

$('card_number').addEventListener('input', (event) => {
  const input = event.target;
  if (input.selectionStart !== input.value.length) return;
  const formatted = input.value
    .replace(/\D/g, '')
    .slice(0, 19)
    .replace(/(\d{4})(?=\d)/g, '$1 ');
  if (formatted !== input.value) input.value = formatted;
});

$('card_expiry').addEventListener('input', (event) => {
  const input = event.target;
  if (input.selectionStart !== input.value.length || (event.inputType || '').startsWith('delete')) return;
  if (/^\d{2}$/.test(input.value)) input.value += ' / ';
  else if (/^[2-9]$/.test(input.value)) input.value = `0${input.value} / `;
});

watchFields(CHECKS);

// ---- The session. GET /api/checkout/{token}/ says where it stands:
// open (the form), pending (the bank is deciding), paid | failed | canceled (final), expired.

function renderSession(data) {
  currency = data.currency || currency;
  const merchant = (data.merchant && data.merchant.name) || 'Checkout';
  text('merchant', merchant);
  document.title = `Pay ${merchant}`;
  $('test-mode').hidden = data.environment !== 'sandbox';
  // Production running on the simulator (KASSA_ALLOW_SIMULATOR): no real money moves, and the page says so.
  $('simulated').hidden = !(
    data.environment === 'production' &&
    data.provider &&
    data.provider.name === 'simulator'
  );
  const lines = (data.items || []).map((item) => ({
    name: item.name,
    quantity: item.quantity,
    amount: item.amount,
  }));
  renderLines('items', lines, currency);
  text('total', money(data.total, currency));
  const hasTax = Boolean(data.tax) && !/^0+(\.0+)?$/.test(data.tax);
  $('subtotal-row').hidden = !hasTax;
  $('tax-row').hidden = !hasTax;
  if (hasTax) {
    text('subtotal', money(data.subtotal, currency));
    text('tax', money(data.tax, currency));
  }
  payLabel = `Pay ${money(data.total, currency)}`;
  text('pay-button', payLabel);
  renderSignup(data);
  const stripe = data.provider && data.provider.name === 'stripe';
  $('card-fields').hidden = stripe;
  $('stripe-element').hidden = !stripe;
  if (stripe) mountStripe(data.provider);
  const expires = Number(data.expires_at) * 1000;
  if (Number.isFinite(expires) && expires > 0) {
    const at = new Date(expires).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
    text('expiry', `This checkout expires on ${at}.`).hidden = false;
  }
  showScreen('checkout');
}

/** A final answer (SUCCESS | FAILED | CANCELED) becomes its screen; CHECKOUT_PENDING returns false. */
function finishWith(data, failureMessage) {
  const kind = { SUCCESS: 'success', FAILED: 'failed', CANCELED: 'canceled' }[data.status];
  if (!kind) return false;
  finish(kind, data.redirect_url, kind === 'failed' ? failureMessage : undefined);
  return true;
}

function failureSentence(attempt) {
  const reason = attempt && attempt.errorMessage;
  return reason ? `${reason} Your payment could not be completed.` : undefined;
}

// ---- The payment provider does not answer. Kassa then answers 503 with Retry-After, and the 503 means
// nothing was changed (no charge, no cancel), so the page may send the very same call again. It does so by
// itself after Retry-After, a few times only: a longer outage ends with a "Try again" the customer chooses,
// not with a page that asks for ever. The customer keeps what they typed: the form is only hidden, and a
// pay is retried with the body it was first sent with, the buttons disabled meanwhile so nothing goes twice.

const PROVIDER_TRIES = 4;
const PROVIDER_WAITING = "The payment provider is not answering. We'll try again in a few seconds…";

/** Retry-After in milliseconds, kept within 1 to 30 seconds so an odd value neither hammers nor stalls. */
function retryDelay(response) {
  return Math.min(Math.max(response.retryAfter || 5, 1), 30) * 1000;
}

/**
 * Sends `request()` until the provider answers, at most PROVIDER_TRIES times; `waiting()` runs before each
 * pause, to say why the page waits. Returns the last answer, a 503 when none of the tries was answered.
 */
async function untilProviderAnswers(request, waiting) {
  let response = await request();
  for (let tries = 1; response.status === 503 && tries < PROVIDER_TRIES; tries++) {
    waiting();
    await sleep(retryDelay(response));
    response = await request();
  }
  return response;
}

let waitingRetry = null;

/**
 * The waiting screen: the provider is not answering and the page asks again by itself; with `retry`, it
 * has stopped asking and offers "Try again", which calls `retry`.
 */
function showWaiting(message, retry) {
  const shown = !$('waiting-title').closest('section').hidden;
  waitingRetry = retry || null;
  $('waiting-icon').className = retry ? 'icon' : 'icon pending';
  $('waiting-icon').textContent = retry ? '!' : '';
  text('waiting-message', message);
  $('waiting-retry').hidden = !retry;
  showScreen('waiting');
  document.title = $('waiting-title').textContent;
  if (retry) $('waiting-retry').focus();
  else if (!shown) $('waiting-title').focus();
}

$('waiting-retry').addEventListener('click', () => {
  const retry = waitingRetry;
  if (!retry) return;
  waitingRetry = null;
  showWaiting(PROVIDER_WAITING);
  retry();
});

/** Loads the session and shows what fits its state; `message` is shown above the form when it is open. */
async function load(message) {
  if (!/^[A-Za-z0-9_-]{16,200}$/.test(token)) return finish('notfound');
  const response = await untilProviderAnswers(
    () => api('GET', base),
    () => showWaiting(PROVIDER_WAITING),
  );
  if (response.status === 503)
    return showWaiting('It is still not answering. Try again in a moment.', () => load(message));
  if (response.status === 404) return finish('notfound');
  if (response.status === 410) return finish('gone');
  if (response.status !== 200) return finish('error');
  const data = response.data;
  signup = data.subscription || null;
  if (data.status === 'expired')
    return finish(
      'gone',
      null,
      'This checkout has expired. Ask the merchant for a new link if you still want to pay.',
    );
  if (data.status === 'pending') return syncUntilDone();
  if (returned && data.status === 'open') {
    returned = false;
    return syncUntilDone();
  }
  const attempts = data.attempts || [];
  if (data.status === 'open' && data.next_action && data.next_action.type === 'simulator_challenge') {
    renderSession(data);
    return showChallenge(data.next_action);
  }
  if (data.status !== 'open')
    return finishWith(
      { status: data.sync_status, redirect_url: data.redirect_url },
      failureSentence(attempts[0]),
    );
  renderSession(data);
  setBusy(false);
  formError(message || null);
  const provider = data.provider || {};
  if (provider.name === 'stripe' && !provider.client_secret && !stripeForm)
    return awaitPaymentForm(response, message);
  unprepared = 0;
}

/** Where an outcome stands when the page stops asking: it may be decided already, so nothing is paid twice. */
const NOT_CONFIRMED =
  'We could not confirm your payment yet, so we do not know whether your card was charged. Do not pay again: try again in a moment to see its outcome.';
/** How many answered asks after a card attempt whose answer was lost, before the form comes back. */
const UNKNOWN_TRIES = 8;

/**
 * Asks sync-status for the outcome, on the "Confirming your payment…" screen, until it is decided: every
 * POLL_MS while Kassa answers, after Retry-After while the provider does not (503, worded as for the other
 * calls); after PROVIDER_TRIES unanswered asks in a row it stops on the waiting screen, whose "Try again"
 * asks again (it never pays). `lostAnswer`: no answer came back from the card attempt, which may have
 * charged the card: the status is asked UNKNOWN_TRIES times while the payment is neither decided nor with
 * the bank, then the form comes back with a warning (the server refuses a second attempt while the first is
 * unknown). Otherwise the bank is deciding, and the page asks until it has decided.
 */
async function syncUntilDone(lostAnswer = false) {
  let shown = null;
  let unanswered = 0;
  let undecided = 0;
  for (;;) {
    const response = await api('POST', '/api/checkout/sync-status/', { token });
    if (response.status === 200) {
      if (finishWith(response.data)) return;
      // With the bank: ask until it decides. Otherwise the checkout is open again: back to the form.
      if (response.data.payment_status === 'pending') lostAnswer = false;
      else if (!lostAnswer) return load();
    } else if (response.status === 404) {
      return finish('notfound');
    }
    unanswered = response.status === 503 ? unanswered + 1 : 0;
    if (unanswered >= PROVIDER_TRIES) return showWaiting(NOT_CONFIRMED, () => syncUntilDone(lostAnswer));
    if (lostAnswer && !unanswered && ++undecided >= UNKNOWN_TRIES)
      return load(
        'We could not confirm your last attempt yet, so we do not know whether your card was charged. Check with your bank before paying again.',
      );
    const sentence = unanswered
      ? "The payment provider is not answering. We'll ask again in a few seconds; keep this page open."
      : lostAnswer
        ? 'We are confirming your payment with the bank. Keep this page open; it updates by itself.'
        : 'Your bank is confirming the payment. Keep this page open; it updates by itself.';
    if (sentence !== shown) {
      shown = sentence;
      showResult('pending', 'Confirming your payment…', sentence);
    }
    await sleep(unanswered ? retryDelay(response) : Math.max(POLL_MS, response.retryAfter * 1000));
  }
}

function setBusy(value, label) {
  busy = value;
  $('pay-button').disabled = value;
  $('cancel-button').disabled = value;
  text('pay-button', value ? label : payLabel);
}

function formError(message) {
  showAlert('pay-error', message);
}

async function pay(event) {
  event.preventDefault();
  if (busy) return;
  formError(null);
  if (stripeForm) return payWithStripe();
  // A Stripe checkout whose Payment Element is not there yet (a cancel that failed enabled Pay again).
  if ($('card-fields').hidden) return load();
  if (!validateAll(CHECKS)) return;
  const expiry = parseExpiry($('card_expiry').value);
  setBusy(true, 'Processing…');
  const card = {
    card_number: digitsOf($('card_number').value),
    exp_month: expiry.month,
    exp_year: expiry.year,
    cvc: $('card_cvc').value.trim(),
    cardholder_name: $('cardholder_name').value.trim(),
  };
  const response = await untilProviderAnswers(
    () => api('POST', `${base}pay/`, card),
    () =>
      formError(
        "The payment provider is not answering, and nothing was charged. We'll try again in a few seconds…",
      ),
  );
  if (response.status === 200 || response.status === 201) return attempted(response.data);
  if (response.status === 404) return finish('notfound');
  // Finished elsewhere (410), or an attempt or the bank's decision still running (409): show where it stands.
  if (response.status === 410 || response.status === 409) return load(response.data.detail);
  setBusy(false);
  if (response.status === 503)
    return formError(
      'The payment provider is still not answering, and nothing was charged. Try again in a moment.',
    );
  if (response.status === 429) return formError('Too many attempts. Wait a moment, then try again.');
  if (response.status === 400)
    return formError(response.data.detail || 'Check your card details and try again.');
  formError('We could not reach the payment service. Check your connection and try again.');
}

/** After an attempt: final outcomes get their screen, a bank still deciding is polled, a decline may retry. */
function attempted(data) {
  const attempt = data.attempt || {};
  if (finishWith(data, failureSentence(attempt))) return;
  if (data.payment_status === 'pending') return syncUntilDone();
  if (data.next_action && data.next_action.type === 'simulator_challenge')
    return showChallenge(data.next_action);
  // No answer came back from the provider: the card may have been charged, so the status is asked first.
  if (data.outcome === 'unknown') return syncUntilDone(true);
  setBusy(false);
  formError(`${attempt.errorMessage || 'Your card was declined.'} Check the details or use another card.`);
  $('card_cvc').value = '';
  $('card_number').focus();
}

// ---- Stripe's Payment Element (production on Stripe): Stripe.js is loaded by the page in that mode only.

let stripeForm = null;

/** Resolves with window.Stripe once Stripe.js has loaded, or null after a while. */
async function stripeJs() {
  for (let i = 0; i < 100 && !window.Stripe; i++) await sleep(100);
  return window.Stripe || null;
}

async function mountStripe(provider) {
  if (stripeForm && stripeForm.clientSecret === provider.client_secret) return;
  // Without a client secret the payment is not open at Stripe yet: load() reads again (awaitPaymentForm).
  if (!provider.client_secret) return;
  const StripeJs = await stripeJs();
  if (!StripeJs)
    return formError('The payment form could not be loaded. Check your connection and reload the page.');
  const stripe = StripeJs(provider.publishable_key);
  const elements = stripe.elements({ clientSecret: provider.client_secret });
  elements.create('payment').mount('#stripe-element');
  stripeForm = { stripe, elements, clientSecret: provider.client_secret, mode: provider.mode || 'payment' };
  formError(null);
}

// A Stripe checkout's payment is opened at Stripe by the page's first read (provider-form.ts). When Stripe
// does not answer, the read still answers 200, only without the client secret, and with Retry-After: the
// page reads again after it (kept within 1 to 30 s, as for a 503) and says at once that the provider is not
// answering. A read without the secret and without Retry-After (another read opened the payment a moment
// ago) is read again sooner, backing off (1.5 s doubling), "Preparing the payment form…" the first time.
// Stripe may stay silent for minutes, so after PREPARE_TRIES reads the page stops and offers "Try again":
// no open page keeps asking for ever.

const PREPARE_TRIES = 5;
let unprepared = 0;
/** The one pending read: a load() from elsewhere (a failed cancel) replaces it rather than adding a second. */
let prepareTimer = null;

function awaitPaymentForm(response, message) {
  unprepared += 1;
  if (unprepared >= PREPARE_TRIES) {
    unprepared = 0;
    return showWaiting(
      'It is still not answering, so the payment form cannot be shown yet. Try again in a moment.',
      () => load(message),
    );
  }
  // Nothing to pay with until the Payment Element is there; Cancel stays usable.
  $('pay-button').disabled = true;
  const silent = response.retryAfter > 0;
  formError(unprepared === 1 && !silent ? 'Preparing the payment form…' : PROVIDER_WAITING);
  // The server's pacing when it gives one, else the page's own.
  const delay = silent ? retryDelay(response) : Math.min(POLL_MS * 2 ** (unprepared - 1), 30_000);
  // A cancel started meanwhile decides what the page shows next, not this read.
  clearTimeout(prepareTimer);
  prepareTimer = setTimeout(() => {
    if (!busy) load(message);
  }, delay);
}

async function payWithStripe() {
  setBusy(true, 'Processing…');
  // A trial signup only saves the card (a SetupIntent); everything else is a payment.
  const confirm = stripeForm.mode === 'setup' ? 'confirmSetup' : 'confirmPayment';
  const result = await stripeForm.stripe[confirm]({
    elements: stripeForm.elements,
    confirmParams: { return_url: `${location.origin}/checkout/${encodeURIComponent(token)}?return=1` },
    redirect: 'if_required',
  });
  if (result.error) {
    // The decline is Stripe's; sync-status records it as an attempt here too.
    await api('POST', '/api/checkout/sync-status/', { token });
    setBusy(false);
    return formError(
      `${result.error.message || 'Your card was declined.'} Check the details or use another card.`,
    );
  }
  return syncUntilDone();
}

// ---- 3-D Secure (the simulator's step): the bank asks the customer to confirm; its answer decides the attempt.

let challenge = null;
/** The answer still unconfirmed after PROVIDER_TRIES sends: "Try again" sends it once more. */
let unsentAnswer = null;

function showChallenge(action) {
  challenge = action;
  unsentAnswer = null;
  setBusy(false);
  challengeButtons(false);
  $('challenge-error').hidden = true;
  $('challenge-retry').hidden = true;
  showScreen('challenge');
  $('challenge-title').focus();
}

function challengeButtons(disabled) {
  $('challenge-approve').disabled = disabled;
  $('challenge-fail').disabled = disabled;
}

function challengeError(message) {
  text('challenge-error', message).hidden = false;
}

async function answerChallenge(answer) {
  if (!challenge || busy) return;
  busy = true;
  challengeButtons(true);
  $('challenge-retry').hidden = true;
  // A 503 here comes after the simulator took the answer, when the payment is read back; sending the same
  // answer again is safe (a challenge keeps its first answer), so the page does it by itself, the buttons
  // disabled meanwhile so the customer cannot send a second, different answer.
  const response = await untilProviderAnswers(
    () => api('POST', challenge.url, { answer }),
    () =>
      challengeError("The payment provider is not answering. We'll send your answer again in a few seconds…"),
  );
  busy = false;
  if (response.status === 503) {
    // The answer may already be taken: "Try again" sends the same one, and the two choices stay disabled.
    unsentAnswer = answer;
    challengeError('The payment provider is still not answering. Try again in a moment.');
    $('challenge-retry').hidden = false;
    $('challenge-retry').focus();
    return;
  }
  challengeButtons(false);
  if (response.status !== 200) {
    challengeError('Your answer could not be sent. Check your connection and try again.');
    return;
  }
  challenge = null;
  // Approved: the payment is decided; failed: the form comes back with the decline, to try another card.
  if (response.data.status === 'approved') return syncUntilDone();
  return load(
    'The 3-D Secure authentication failed. Your payment could not be completed; try again or use another card.',
  );
}

$('challenge-approve').addEventListener('click', () => answerChallenge('approve'));
$('challenge-fail').addEventListener('click', () => answerChallenge('fail'));
$('challenge-retry').addEventListener('click', () => {
  if (unsentAnswer) answerChallenge(unsentAnswer);
});

async function cancel() {
  if (busy) return;
  setBusy(true, 'Canceling…');
  const response = await untilProviderAnswers(
    () => api('POST', `${base}cancel/`),
    () => formError(PROVIDER_WAITING),
  );
  if (response.status === 200 && finishWith(response.data)) return;
  if (response.status === 404) return finish('notfound');
  if (response.status === 503) {
    setBusy(false);
    return formError(
      'The payment provider is still not answering, so the payment is not canceled yet. Try again in a moment.',
    );
  }
  return load(response.data.detail || 'The payment could not be canceled. Try again.');
}

$('pay-form').addEventListener('submit', pay);
$('cancel-button').addEventListener('click', cancel);
load();
