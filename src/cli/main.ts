// The `kassa` command: serve, worker, migrate, merchant create, demo. Each has --help.
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig } from '../config.ts';
import { DomainError } from '../http/errors.ts';
import { joinDashedValues } from './args.ts';
import { commands } from './commands.ts';

const USAGE = `Usage: kassa <command> [options]

Commands:
${Object.entries(commands)
  .map(([name, command]) => `  ${name.padEnd(18)}${command.summary}`)
  .join('\n')}

Run "kassa <command> --help" for a command's options. Configuration comes from KASSA_* environment variables (see README).`;

export async function run(argv: string[]): Promise<number> {
  const words: string[] = [];
  while (argv.length && !argv[0].startsWith('-')) {
    const next = argv[0];
    const candidate = [...words, next].join(' ');
    if (!Object.keys(commands).some((name) => name === candidate || name.startsWith(`${candidate} `))) break;
    words.push(next);
    argv = argv.slice(1);
  }
  const name = words.join(' ');
  const command = commands[name];
  if (!command) {
    const help = argv.includes('--help') || argv.includes('-h');
    if (help || (name === '' && argv.length === 0)) {
      console.log(USAGE);
      return help ? 0 : 1;
    }
    console.error(`Unknown command "${[name, ...argv].filter(Boolean).join(' ')}".\n\n${USAGE}`);
    return 1;
  }
  const options = { ...command.options, help: { type: 'boolean' as const, short: 'h' } };
  const { values, positionals } = parseArgs({
    args: joinDashedValues(argv, options),
    options,
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    console.log(`Usage: kassa ${name} ${command.usage}\n\n${command.summary}\n\n${command.help}`);
    return 0;
  }
  return command.run({ values, positionals, config: () => loadConfig() });
}

try {
  process.exitCode = await run(process.argv.slice(2));
} catch (error) {
  if (error instanceof ConfigError || error instanceof DomainError) {
    console.error(`kassa: ${error.message}`);
  } else if (
    error instanceof TypeError &&
    'code' in error &&
    String(error.code).startsWith('ERR_PARSE_ARGS')
  ) {
    console.error(`kassa: ${error.message}`);
  } else {
    console.error(error);
  }
  process.exitCode = 1;
}
