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
import { type PaymentProvider, ProviderUnavailableError } from './types.ts';

export interface Providers {
  /** Who takes a new payment in this environment. */
  forEnvironment(environment: Environment): PaymentProvider;
  /** The provider a recorded row names (payments.provider); throws for one this service does not run. */
  named(name: string): PaymentProvider;
  /** Whether this service runs a provider of that name (a webhook path names one). */
  has(name: string): boolean;
  readonly simulator: SimulatorProvider;
}

/**
 * The calls that go to the provider (every method but parseWebhook, which only checks a signature).
 * Exported for the test that makes them all fail (test/openapi-provider-503.test.ts).
 */
export const GUARDED_CALLS = [
  'openPayment',
  'chargeCard',
  'chargeSavedCard',
  'getPayment',
  'findPayment',
  'cancelPayment',
  'clientSecretOf',
  'createCustomer',
  'setupCard',
  'getSetup',
  'findSetup',
  'createRefund',
  'getRefund',
  'findRefund',
] as const satisfies readonly (keyof PaymentProvider)[];
const CALLS = new Set<string>(GUARDED_CALLS);

const guardedProviders = new WeakMap<PaymentProvider, PaymentProvider>();

/**
 * The provider as modules see it: a call that throws (no answer, a 5xx, a rate limit, a refused key)
 * throws ProviderUnavailableError, whatever the connector's own error was, so a request answers 503
 * rather than 500 or the provider's words (http/errors.ts). Callers that turn a failure into an
 * `unknown` outcome (callProvider) or a worker's failed round see the same message as before.
 */
export function guardProvider(provider: PaymentProvider): PaymentProvider {
  const known = guardedProviders.get(provider);
  if (known) return known;
  const guarded = new Proxy(provider, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (typeof property !== 'string' || !CALLS.has(property) || typeof value !== 'function') return value;
      return async (...args: unknown[]) => {
        try {
          return await value.apply(target, args);
        } catch (error) {
          throw error instanceof ProviderUnavailableError
            ? error
            : new ProviderUnavailableError(target.name, error);
        }
      };
    },
  });
  guardedProviders.set(provider, guarded);
  return guarded;
}

export function providersOf(simulator: SimulatorProvider, production: PaymentProvider): Providers {
  const sandbox = guardProvider(simulator);
  const live = guardProvider(production);
  const byName = new Map<string, PaymentProvider>([
    [sandbox.name, sandbox],
    [live.name, live],
  ]);
  return {
    simulator,
    forEnvironment: (environment) => (environment === 'sandbox' ? sandbox : live),
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
  const guarded = guardProvider(replacement);
  return {
    ...providers,
    forEnvironment: (environment) => {
      const provider = providers.forEnvironment(environment);
      return provider.name === replacement.name ? guarded : provider;
    },
    named: (name) => (name === replacement.name ? guarded : providers.named(name)),
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
