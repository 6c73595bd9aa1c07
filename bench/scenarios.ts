// What `npm run bench` measures against the running service. To add a scenario, append one to
// SCENARIOS: `setup` runs once per database against a fresh service with a merchant, a session token
// and an API key, and returns the request autocannon repeats, with the status it should answer.

export interface BenchRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** The status every response should have; others are counted as unexpected. */
  expectStatus: number;
  /** Said next to the figures, e.g. when a scenario fell back to a cheaper request. */
  note?: string;
}

export interface CallResult {
  status: number;
  body: Record<string, unknown>;
}

export interface ServiceFixture {
  url: string;
  /** Dashboard session token of the benchmark merchant. */
  token: string;
  /** A production API key of the same merchant with every scope. */
  apiKey: string;
  call(
    method: string,
    path: string,
    options?: { token?: string; apiKey?: string; body?: unknown },
  ): Promise<CallResult>;
}

export interface Scenario {
  name: string;
  setup(fixture: ServiceFixture): Promise<BenchRequest>;
}

/** A real payment made through checkout and the hosted page, or null when those routes are not there yet. */
async function makePayment(fixture: ServiceFixture): Promise<string | null> {
  const checkout = await fixture.call('POST', '/api/checkout/create/', {
    apiKey: fixture.apiKey,
    body: {
      billing_country: 'FR',
      billing_first_name: 'Ada',
      billing_last_name: 'Lovelace',
      billing_email: 'ada@example.com',
      products: [{ name: 'Benchmark widget', unit_price: 25, quantity: 1 }],
    },
  });
  if (checkout.status !== 201 || typeof checkout.body.token !== 'string') return null;
  const paid = await fixture.call('POST', `/api/checkout/${checkout.body.token}/pay/`, {
    body: {
      card_number: '4242424242424242',
      exp_month: 12,
      exp_year: 2099,
      cvc: '123',
      cardholder_name: 'Ada',
    },
  });
  return paid.status === 200 && typeof paid.body.transaction_id === 'string'
    ? paid.body.transaction_id
    : null;
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'GET /api/organization/ (session)',
    async setup({ token }) {
      return {
        method: 'GET',
        path: '/api/organization/',
        headers: { authorization: `Token ${token}` },
        expectStatus: 200,
      };
    },
  },
  {
    name: 'GET /api/transactions/{id}/ (API key)',
    async setup(fixture) {
      const headers = { authorization: `Api-Key ${fixture.apiKey}` };
      const payment = await makePayment(fixture);
      if (payment)
        return { method: 'GET', path: `/api/transactions/${payment}/`, headers, expectStatus: 200 };
      // Without the payments routes the lookup still authenticates the key, then answers 404.
      return {
        method: 'GET',
        path: '/api/transactions/TX0000000000000000/',
        headers,
        expectStatus: 404,
        note: 'no payment could be made; measures key authentication plus a 404 lookup',
      };
    },
  },
];
