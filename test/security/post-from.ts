// A POST from a chosen loopback address (127.0.0.x), so the server sees distinct client addresses
// without trusting any proxy header; the answer is timed.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';

export interface Answer {
  status: number;
  retryAfter: string | null;
  headers: IncomingHttpHeaders;
  body: Record<string, unknown>;
  ms: number;
}

/** POSTs a JSON body from a chosen local address (127.0.0.x), timing the answer. */
export function postFrom(
  server: { url: string },
  localAddress: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const url = new URL(server.url + path);
  const payload = JSON.stringify(body);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress,
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(payload),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: (res.headers['retry-after'] as string | undefined) ?? null,
            headers: res.headers,
            body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
            ms: performance.now() - started,
          });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}
