/**
 * What every holdfast subcommand shares: exit codes, one-line errors, option parsing and output helpers.
 *
 * @module
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/**
 * The exit codes of the holdfast command. `exec` otherwise exits with its command's own code (or 128 + N when the
 * command was killed by signal N), so these were picked away from the codes commands commonly use.
 */
export const EXIT = {
  /** Success. */
  OK: 0,
  /** Nothing to do: `unlock --force` found no lock, `inspect` with `--held` found it free. */
  NOT_FOUND: 1,
  /** Bad command line (sysexits EX_USAGE). */
  USAGE: 64,
  /** Redis could not be reached or did not answer (sysexits EX_UNAVAILABLE). */
  REDIS_UNAVAILABLE: 69,
  /** An unexpected internal error (sysexits EX_SOFTWARE). */
  INTERNAL: 70,
  /** `exec --wait` ran out before the lock was free (sysexits EX_TEMPFAIL). */
  WAIT_TIMEOUT: 75,
  /** `exec`: the lock was lost while the command ran; the command was stopped. */
  LOCK_LOST: 76,
  /** `exec`: the command was found but could not be run (shell convention). */
  CANNOT_EXECUTE: 126,
  /** `exec`: the command was not found (shell convention). */
  COMMAND_NOT_FOUND: 127,
} as const;

/** An error that ends the command with one line on stderr and a given exit code. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A bad command line: exit 64, with a pointer to `--help`. */
export class UsageError extends CliError {
  constructor(message: string, command?: string) {
    super(`${message} (see: holdfast ${command ? command + ' ' : ''}--help)`, EXIT.USAGE);
  }
}

/** Options every subcommand that talks to Redis accepts. */
export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  prefix: { type: 'string' },
  'connect-timeout': { type: 'string' },
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsConfig['options'];

/** Text shown under every connecting command's `--help`. */
export const CONNECTION_HELP = `Connection:
  --url <url>              Redis URL (default: $REDIS_URL, else redis://127.0.0.1:6379).
                           rediss:// for TLS. The password may be in the URL, or in $REDISCLI_AUTH or
                           $HOLDFAST_PASSWORD: it never has to be on the command line.
  --prefix <prefix>        the key prefix your application gives holdfast (default: holdfast:)
  --connect-timeout <ms>   give up connecting after this long (default: 3000)
  --json                   machine-readable output
  --verbose                stack traces on errors
  -h, --help               this help`;

/** Parses `argv` strictly; unknown options and bad values become a {@link UsageError}. */
export function parse<O extends NonNullable<ParseArgsConfig['options']>>(
  argv: string[],
  options: O,
  command: string,
): { values: ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>['values']; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { values, positionals };
  } catch (error) {
    // node's messages are long and mention `parseArgs`; keep their first sentence
    const message = error instanceof Error ? error.message.split('. ')[0]!.replace(/\.$/, '') : String(error);
    throw new UsageError(message, command);
  }
}

/** A whole number of ms from an option value, or `undefined` when absent. */
export function msOption(value: string | undefined, name: string, command: string, min = 0): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`--${name} must be a whole number of milliseconds, got "${value}"`, command);
  const ms = Number(value);
  if (ms < min || ms > 2_147_483_647) throw new UsageError(`--${name} must be between ${min} and 2147483647 ms, got ${ms}`, command);
  return ms;
}

/** Writes one line to stdout. */
export function out(line = ''): void {
  process.stdout.write(line + '\n');
}

/** Writes `holdfast: <message>` to stderr. */
export function warn(message: string): void {
  process.stderr.write(`holdfast: ${message}\n`);
}

/** A plain text table: a header row, then rows; columns padded to their widest cell. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** `1234` → `1.2 s`, `850` → `850 ms`, `null` → `-`. */
export function formatMs(ms: number | null): string {
  if (ms === null) return '-';
  if (ms < 0) return String(ms);
  return ms >= 10_000 ? `${(ms / 1000).toFixed(0)} s` : ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${ms} ms`;
}
