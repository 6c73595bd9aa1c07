// The providers of a running service: production's (KASSA_PROVIDER) and the sandbox's, which is always
// the simulator (so `sandbox_simulate` keeps working). A recorded row names its provider, and is read
// back through that one.
import type { Kysely } from 'kysely';
import type { Config } from '../config.ts';
import type { Clock } from '../context.ts';
import type { Database } from '../db/database.ts';
import type { Environment } from '../modules/api-keys/table.ts';
import { SimulatorProvider } from './simulator/simulator.ts';
import { StripeProvider } from './stripe/stripe.ts';
import type { PaymentProvider } from './types.ts';

export interface Providers {
  /** Who takes a new payment in this environment. */
  forEnvironment(environment: Environment): PaymentProvider;
  /** The provider a recorded row names (payments.provider); throws for one this service does not run. */
  named(name: string): PaymentProvider;
  /** Whether this service runs a provider of that name (a webhook path names one). */
  has(name: string): boolean;
  readonly simulator: SimulatorProvider;
}

export function providersOf(simulator: SimulatorProvider, production: PaymentProvider): Providers {
  const byName = new Map<string, PaymentProvider>([
    [simulator.name, simulator],
    [production.name, production],
  ]);
  return {
    simulator,
    forEnvironment: (environment) => (environment === 'sandbox' ? simulator : production),
    named(name) {
      const provider = byName.get(name);
      if (!provider) throw new Error(`provider "${name}" is not configured in this service`);
      return provider;
    },
    has: (name) => byName.has(name),
  };
}

/** The same providers with one of them replaced (tests wrap a provider to script its answers). */
export function replaceProvider(providers: Providers, replacement: PaymentProvider): Providers {
  return {
    ...providers,
    forEnvironment: (environment) => {
      const provider = providers.forEnvironment(environment);
      return provider.name === replacement.name ? replacement : provider;
    },
    named: (name) => (name === replacement.name ? replacement : providers.named(name)),
  };
}

export function createProviders(config: Config, db: Kysely<Database>, clock: Clock): Providers {
  const simulator = new SimulatorProvider({
    db,
    clock,
    settleDelayMs: config.simSettleDelayMs,
    refundDelayMs: config.simRefundDelayMs,
    fault: config.simFault,
  });
  const production = config.provider === 'stripe' ? new StripeProvider(config.stripe, config) : simulator;
  return providersOf(simulator, production);
}
