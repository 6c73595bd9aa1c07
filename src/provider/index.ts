// Builds the configured provider. KASSA_PROVIDER=simulator (the default) is the built-in simulation.
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import type { Clock } from '../context.ts';
import type { Database } from '../db/database.ts';
import { SimulatorProvider } from './simulator/simulator.ts';
import type { PaymentProvider } from './types.ts';

export function createProvider(config: Config, db: Kysely<Database>, clock: Clock): PaymentProvider {
  switch (config.provider) {
    case 'simulator':
      return new SimulatorProvider({
        db,
        clock,
        settleDelayMs: config.simSettleDelayMs,
        refundDelayMs: config.simRefundDelayMs,
      });
  }
}
