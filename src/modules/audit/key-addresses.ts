// "Key use from a new address" on the API-key hot path. Each process remembers the addresses it has seen
// per key (a Map lookup and a Set lookup per request: nothing else on the path); an address it has not
// seen is recorded with INSERT … ON CONFLICT DO NOTHING into api_key_addresses, and only the process whose
// insert created the row writes the audit entry, in the same transaction. So the database sees one small
// transaction per (key, address, process) and one audit entry per (key, address) ever.
import { sql } from 'kysely';
import type { AppContext } from '../../context.ts';
import type { Client } from './record.ts';
import { recordAudit } from './record.ts';

/** Beyond this many addresses of one key, the process forgets them and starts again (memory stays bounded). */
const MAX_ADDRESSES_PER_KEY = 1000;
const MAX_KEYS = 10_000;

export class KeyAddressBook {
  private readonly seen = new Map<number, Set<string>>();

  /** Whether a request of the key from this address has nothing to record (seen before, or no address). */
  knows(keyId: number, ip: string | null | undefined): boolean {
    return !ip || this.seen.get(keyId)?.has(ip) === true;
  }

  /** True the first time this process sees the address for the key (then the caller records it). */
  private firstSight(keyId: number, ip: string): boolean {
    let addresses = this.seen.get(keyId);
    if (addresses?.has(ip)) return false;
    if (!addresses || addresses.size >= MAX_ADDRESSES_PER_KEY) {
      if (!addresses && this.seen.size >= MAX_KEYS) this.seen.clear();
      addresses = new Set();
      this.seen.set(keyId, addresses);
    }
    addresses.add(ip);
    return true;
  }

  /** Records the first use of a key from an address (audited as api_key.used_from_new_address). */
  async note(
    ctx: AppContext,
    key: { keyId: number; organizationId: number; environment: string },
    client: Client,
  ): Promise<void> {
    const ip = client.ip;
    if (!ip || !this.firstSight(key.keyId, ip)) return;
    const now = ctx.clock().toISOString();
    try {
      await ctx.db.transaction().execute(async (trx) => {
        const inserted = await trx
          .insertInto('api_key_addresses')
          .values({ api_key_id: key.keyId, ip, first_seen_at: now })
          .onConflict((oc) => oc.columns(['api_key_id', 'ip']).doNothing())
          .returning(sql<number>`1`.as('one'))
          .executeTakeFirst();
        if (!inserted) return;
        await recordAudit(
          trx,
          key.organizationId,
          { type: 'api_key', id: key.keyId, email: null, ...client },
          {
            action: 'api_key.used_from_new_address',
            target: { type: 'api_key', id: key.keyId },
            details: { environment: key.environment },
          },
          now,
        );
      });
    } catch (error) {
      // Forget it, so the next request from there tries again; the request itself goes on.
      this.seen.get(key.keyId)?.delete(ip);
      throw error;
    }
  }
}
