// Credentials in an endpoint URL (`https://user:password@host/…`). Setting such a URL has been a 400
// since 7e6bf6b, but an endpoint stored before keeps its URL: Kassa never sends those credentials (the
// merchant was never asked whether Kassa may keep and send them, and the signature is how a receiver
// authenticates Kassa). Each attempt to such an endpoint is recorded as failed with CREDENTIALS_REFUSED,
// without a request, and retried on the schedule, so that setting the URL again without them lets the
// pending deliveries through; GET /organization/webhook/ names the problem. Where the URL is shown
// (the configuration, each attempt's url), its password is masked.

export const CREDENTIALS_REFUSED =
  'Not sent: the endpoint URL contains credentials (user:password@), which Kassa does not send. ' +
  'Set endpoint_url again without them (PUT /api/organization/webhook/) and authenticate Kassa by the signature.';

export const CREDENTIALS_PROBLEM =
  'endpoint_url contains credentials (user:password@), which Kassa does not send: no delivery is sent ' +
  'until endpoint_url is set again without them. Deliveries wait for their retries meanwhile.';

const MASK = '****';

/** Whether `url` parses and carries a user name or a password. */
export function hasCredentials(url: string): boolean {
  // Most URLs have no '@' at all: no parse for them (the worker asks once per attempt).
  if (!url.includes('@')) return false;
  try {
    const parsed = new URL(url);
    return parsed.username !== '' || parsed.password !== '';
  } catch {
    return false;
  }
}

/** `url` with its password masked (the user name kept, so the merchant knows which URL it is). */
export function maskCredentials(url: string): string {
  if (!hasCredentials(url)) return url;
  const parsed = new URL(url);
  if (parsed.password !== '') parsed.password = MASK;
  return parsed.href;
}
