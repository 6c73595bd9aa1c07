// Wrapping a real provider to script some of its answers in a test; the rest go to the real one.
import type { AppContext } from '../../src/context.ts';
import { replaceProvider } from '../../src/provider/index.ts';
import type { PaymentProvider } from '../../src/provider/types.ts';

/** The real provider with some methods replaced (the others keep their `this`). */
export function wrapProvider(real: PaymentProvider, overrides: Partial<PaymentProvider>): PaymentProvider {
  return Object.assign(Object.create(real) as PaymentProvider, overrides);
}

/** Puts a wrapped provider into the running service; returns the undo. */
export function useProvider(ctx: AppContext, provider: PaymentProvider): () => void {
  const before = ctx.providers;
  ctx.providers = replaceProvider(before, provider);
  return () => {
    ctx.providers = before;
  };
}
