// Table types of the webhooks module: the endpoint of each organization, deliveries (one per event,
// plus manual redeliveries) with their attempts, and the requests the public test receiver kept.
import type { Generated, Selectable } from 'kysely';
import type { Environment } from '../api-keys/table.ts';

export interface WebhookEndpointsTable {
  id: Generated<number>;
  organization_id: number;
  endpoint_url: string;
  /** The `whsec_…` secret, AES-256-GCM sealed with the service's secret key. */
  secret_encrypted: string;
  created_at: string;
  updated_at: string;
  secret_rotated_at: string;
  /** The secret a rotation replaced, sealed like secret_encrypted, while its overlap lasts; else null. */
  previous_secret_encrypted: string | null;
  /** When the previous secret stops signing (ISO); null when there is none. */
  previous_secret_expires_at: string | null;
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface WebhookDeliveriesTable {
  id: Generated<number>;
  /** The UUID sent as X-Webhook-Delivery-Id; the same for every automatic retry. */
  delivery_id: string;
  organization_id: number;
  event_id: number;
  event_type: string;
  environment: Environment;
  subject: string | null;
  status: DeliveryStatus;
  attempt_count: number;
  /** When the next attempt is due (ISO); kept as the last due time once delivered or failed. */
  next_attempt_at: string;
  /** The lease: the worker that claimed the delivery and until when. */
  locked_by: string | null;
  locked_until: string | null;
  last_response_status: number | null;
  last_error: string | null;
  /** Numeric id of the delivery this one redelivers (manual redelivery), else null. */
  redelivery_of: number | null;
  created_at: string;
  updated_at: string;
  delivered_at: string | null;
}

export interface WebhookAttemptsTable {
  id: Generated<number>;
  delivery_id: number;
  attempt: number;
  attempted_at: string;
  url: string;
  response_status: number | null;
  duration_ms: number;
  error: string | null;
  /** The first kilobyte of a non-2xx response body, to help the merchant debug. */
  response_body: string | null;
}

export interface WebhookReceivedTable {
  id: Generated<number>;
  organization_id: number;
  received_at: string;
  content_type: string | null;
  /** JSON object of the request headers (credentials redacted). */
  headers: string;
  body: string;
  body_encoding: 'utf8' | 'base64';
  /** 1 / 0, or null when the request carried no signature or no secret is configured. */
  signature_valid: number | null;
}

/**
 * One claim of outbox events (src/modules/webhooks/worker-store.ts): the claim marks its events
 * dispatched and writes this row; the flush that writes their first deliveries deletes it. While it
 * exists, its events with no first delivery yet are in flight, and once `locked_until` has passed they
 * are made undispatched again (recoverLapsedLeases).
 */
export interface WebhookLeasesTable {
  id: Generated<number>;
  worker_id: string;
  locked_until: string;
  /** The leased events that have an endpoint to send to, as a JSON array of ids. */
  event_ids: string;
}

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;
export type WebhookAttemptRow = Selectable<WebhookAttemptsTable>;
export type WebhookReceivedRow = Selectable<WebhookReceivedTable>;

export interface WebhookTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_attempts: WebhookAttemptsTable;
  webhook_received: WebhookReceivedTable;
  webhook_leases: WebhookLeasesTable;
}
