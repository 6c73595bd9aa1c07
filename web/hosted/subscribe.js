// The signup page of a plan, /subscribe/{plan id}: the plan and its price, a short billing form, then
// on to the signup checkout, which saves the card (and charges the first period unless there is a trial).

const planId = pathParameter();
const planBase = `/api/subscriptions/public/${encodeURIComponent(planId)}/`;
let startLabel = 'Continue';

function unavailable(kind, detail) {
  if (kind === 'notfound') {
    return showResult('notfound', 'Plan not found', 'Check the address, or ask the merchant for a new link.');
  }
  showResult('gone', 'This plan is no longer available', detail || 'Ask the merchant for a new link.');
}

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

function renderPlan(data) {
  const merchant = (data.merchant && data.merchant.name) || 'Subscribe';
  text('merchant', merchant);
  document.title = `Subscribe to ${data.name} - ${merchant}`;
  $('test-mode').hidden = data.environment !== 'sandbox';
  text('plan-name', data.name);
  const price = money(data.amount, data.currency);
  const every = everyText(data.interval, data.interval_count);
  text('plan-price', price);
  text('plan-interval', every);
  const trial = Number(data.trial_days) || 0;
  if (trial > 0) {
    text(
      'plan-trial',
      `Free for ${trial} ${trial === 1 ? 'day' : 'days'}: your card is saved today and not charged.`,
    ).hidden = false;
    text('plan-terms', `After the trial, ${price} ${every} until you cancel.`);
    startLabel = 'Continue to start your trial';
  } else {
    text('plan-terms', `${price} today, then ${every} until you cancel.`);
    startLabel = 'Continue to payment';
  }
  text('start-button', startLabel);
  showScreen('plan');
}

async function load() {
  if (!/^plan_[0-9A-Za-z]{14}$/.test(planId)) return unavailable('notfound');
  const response = await api('GET', planBase);
  if (response.status === 404) return unavailable('notfound');
  if (response.status === 410) return unavailable('gone', response.data.detail);
  if (response.status !== 200) {
    return showResult('error', 'Something went wrong', 'We could not load this page. Reload to try again.');
  }
  renderPlan(response.data);
}

billingForm({
  startPath: () => `${planBase}start/`,
  label: () => startLabel,
  unavailable,
  failure: 'We could not start your subscription. Check your connection and try again.',
});
load();
