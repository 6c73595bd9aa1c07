// Starts the ideal server (bench/ideal/server.ts) on a bench database and proves, before anything is
// measured, that it does the same work as Kassa: GET answers the same bytes for the same payment, and a
// checkout created on each stores the same row (every column but the ones that are fresh per session).
import { type Kysely, sql } from 'kysely';
import type { Database } from '../../src/db/database.ts';
import { type Child, startNode, stop, waitFor } from '../processes.ts';
import { CHECKOUT_BODY, makePayment, SERVICE_ENV, SERVICE_NODE_FLAGS } from '../service.ts';

/** Columns that differ between any two sessions created from the same request. */
const FRESH = new Set(['id', 'public_id', 'token_hash', 'expires_at', 'created_at', 'updated_at']);

async function raw(url: string, path: string, apiKey: string, body?: unknown) {
  const response = await fetch(url + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Api-Key ${apiKey}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

async function storedSession(db: Kysely<Database>, publicId: string): Promise<Record<string, unknown>> {
  const { rows } = await sql<Record<string, unknown>>`
    select * from checkout_sessions where public_id = ${publicId}`.execute(db);
  if (!rows[0]) throw new Error(`checkout ${publicId} was not stored`);
  return Object.fromEntries(Object.entries(rows[0]).filter(([column]) => !FRESH.has(column)));
}

export interface IdealServer {
  url: string;
  child: Child;
  /** The payment both servers were checked on (the GET scenario reads it). */
  payment: string;
}

export async function startIdeal(
  env: Record<string, string>,
  kassaUrl: string,
  apiKey: string,
  db: Kysely<Database>,
  nodeFlags: string[] = [],
): Promise<IdealServer> {
  // The runtime of `npm start` (its V8 flags and malloc setting): the ideal differs in its code only.
  const child = startNode([...SERVICE_NODE_FLAGS, ...nodeFlags, 'bench/ideal/server.ts'], {
    ...SERVICE_ENV,
    ...env,
  });
  try {
    const [, url] = await waitFor(child, /listening on (http:\/\/\S+)/);
    const payment = await makePayment(kassaUrl, apiKey);
    const path = `/api/transactions/${payment}/`;
    const [kassa, ideal] = [await raw(kassaUrl, path, apiKey), await raw(url, path, apiKey)];
    if (kassa.status !== 200 || ideal.status !== 200 || kassa.text !== ideal.text)
      throw new Error(
        `the ideal answers GET ${path} differently:\n  kassa ${kassa.status} ${kassa.text}\n  ideal ${ideal.status} ${ideal.text}`,
      );
    const made = await Promise.all(
      [kassaUrl, url].map(async (base) => {
        const created = await raw(base, '/api/checkout/create/', apiKey, CHECKOUT_BODY);
        if (created.status !== 201) throw new Error(`checkout on ${base}: ${created.status} ${created.text}`);
        return storedSession(db, String(JSON.parse(created.text).checkout_id));
      }),
    );
    const [kassaRow, idealRow] = made.map((row) => JSON.stringify(row));
    if (kassaRow !== idealRow)
      throw new Error(`the ideal stores a different checkout row:\n  kassa ${kassaRow}\n  ideal ${idealRow}`);
    return { url, child, payment };
  } catch (error) {
    await stop(child);
    throw error;
  }
}
