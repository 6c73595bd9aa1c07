// What a service refuses to start with, about its providers, and what it warns about. `kassa serve` and
// `kassa worker` stop at the first refusal with one line naming the variable; `kassa doctor` lists all.
import { type Config, ConfigError } from '../config.ts';

/** The simulator moves no money: production runs on it only when the operator says so. */
export const SIMULATOR_IN_PRODUCTION =
  'KASSA_ENV=production with the simulator as provider moves no money: set KASSA_PROVIDER=stripe, or KASSA_ALLOW_SIMULATOR=true to take simulated payments.';

export function providerRefusals(config: Config): string[] {
  const refusals: string[] = [];
  if (config.env === 'production' && config.provider === 'simulator' && !config.allowSimulator) {
    refusals.push(SIMULATOR_IN_PRODUCTION);
  }
  if (config.provider === 'stripe') {
    if (!config.stripe.secretKey)
      refusals.push('KASSA_STRIPE_SECRET_KEY must be set when KASSA_PROVIDER=stripe.');
    if (!config.stripe.publishableKey) {
      refusals.push(
        'KASSA_STRIPE_PUBLISHABLE_KEY must be set when KASSA_PROVIDER=stripe (the Payment Element needs it).',
      );
    }
  }
  return refusals;
}

export function providerWarnings(config: Config): string[] {
  const warnings: string[] = [];
  if (config.env === 'production' && config.provider === 'simulator' && config.allowSimulator) {
    warnings.push(
      'production runs on the simulator (KASSA_ALLOW_SIMULATOR=true): its payments are marked simulated.',
    );
  }
  if (config.provider === 'stripe' && !config.stripe.webhookSecret) {
    warnings.push(
      'KASSA_STRIPE_WEBHOOK_SECRET is not set: Stripe webhooks are refused; payments complete by sync only.',
    );
  }
  return warnings;
}

export function assertProvidersStartable(config: Config): void {
  const [first] = providerRefusals(config);
  if (first) throw new ConfigError(first);
}
