// The command line's options, as node:util's parseArgs reads them, with one repair: the value of a
// string option may begin with a dash. A session token or a secret can (base64url has "-"), and
// parseArgs refuses `--token -x…` as ambiguous, so `kassa listen --token $TOKEN` failed for one token
// in 64. Such a value is passed as `--token=-x…`; a known option name is never taken for a value, so a
// forgotten value still gets parseArgs's own error.

interface OptionShape {
  type: 'string' | 'boolean';
  short?: string;
}

export function joinDashedValues(argv: string[], options: Record<string, OptionShape>): string[] {
  const known = new Set(
    Object.entries(options).flatMap(([name, option]) => [
      `--${name}`,
      ...(option.short ? [`-${option.short}`] : []),
    ]),
  );
  const joined: string[] = [];
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index];
    const next = argv[index + 1];
    const name = arg.startsWith('--') && !arg.includes('=') ? arg.slice(2) : null;
    if (
      name !== null &&
      options[name]?.type === 'string' &&
      next?.startsWith('-') &&
      next !== '--' &&
      !known.has(next)
    ) {
      joined.push(`${arg}=${next}`);
      index++;
    } else {
      joined.push(arg);
    }
  }
  return joined;
}

/**
 * The --limit of a list command: a whole number from 1 to 1000, 100 when not given. Null, with the reason
 * printed, when it is anything else.
 */
export function listLimit(raw: unknown): number | null {
  const limit = raw === undefined ? 100 : Number(raw);
  if (Number.isInteger(limit) && limit >= 1 && limit <= 1000) return limit;
  console.error(`kassa: --limit must be a whole number from 1 to 1000, got "${String(raw)}".`);
  return null;
}
