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
  /** `exec --wait` ran out before the lock was free (sysexits EX_TEMPFAIL); `--conflict-exit-code` changes it. */
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
  --connect-timeout <duration>
                           give up connecting after this long (default: 3s)
  --json                   machine-readable output
  --verbose                stack traces on errors
  -h, --help               this help
Durations take a unit: 500ms, 10s, 2m (a bare number is milliseconds).`;

/** Parses `argv` strictly; unknown options and bad values become a {@link UsageError} of one line. */
export function parse<O extends NonNullable<ParseArgsConfig['options']>>(
  argv: string[],
  options: O,
  command: string,
): { values: ReturnType<typeof parseArgs<{ options: O; allowPositionals: true; strict: true }>>['values']; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    return { values, positionals };
  } catch (error) {
    throw new UsageError(parseArgsMessage(error, argv), command);
  }
}

/**
 * node's parseArgs messages run over several lines and name its own API; say the same in one line, in the
 * command's words.
 */
function parseArgsMessage(error: unknown, argv: string[]): string {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: string }).code;
  const option = /'(?:-\w, )?(-{1,2}[\w-]+)/.exec(message)?.[1];
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
    if (message.includes('ambiguous')) {
      const value = argv[argv.indexOf(option) + 1] ?? '';
      return `${option} needs a value, got "${value}" (a value that starts with "-" goes as ${option}=${value})`;
    }
    if (message.includes('missing')) return `${option} needs a value`;
  }
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) return `unknown option ${option}`;
  return oneLine(message.split('. ')[0]!.replace(/\.$/, ''));
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration option: `500ms`, `10s`, `1.5s`, `2m`, `1h`; a bare number is in `bare` units (milliseconds, or
 * seconds where a well-known tool reads it so: `exec --wait`, like `flock -w`). Resolves whole milliseconds, or
 * `undefined` when the option is absent.
 */
export function durationOption(value: string | undefined, name: string, command: string, min = 0, bare: 'ms' | 's' = 'ms'): number | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(value.trim());
  const ms = match ? Number(match[1]) * UNITS[match[2] ?? bare]! : NaN;
  if (!Number.isInteger(ms)) {
    const unit = bare === 's' ? 'seconds' : 'milliseconds';
    throw new UsageError(`--${name} must be a duration such as 500ms, 10s or 2m (a bare number is ${unit}), got "${value}"`, command);
  }
  if (ms < min || ms > 2_147_483_647) throw new UsageError(`--${name} must be between ${min} ms and 2147483647 ms, got ${ms} ms`, command);
  return ms;
}

/** A whole-number option within `[min, max]`, or `undefined` when absent. */
export function intOption(value: string | undefined, name: string, command: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got "${value}"`, command);
  return Number(value);
}

/** Folds a message onto one line: every error the command prints is one line. */
export function oneLine(message: string): string {
  return message.replace(/\s*\n\s*/g, ' ').trim();
}

/** Writes one line to stdout. */
export function out(line = ''): void {
  process.stdout.write(line + '\n');
}

/** Writes `holdfast: <message>` to stderr. */
export function warn(message: string): void {
  process.stderr.write(`holdfast: ${oneLine(message)}\n`);
}

// East Asian wide and fullwidth characters (CJK, Hangul, fullwidth forms, most emoji) take two terminal columns.
const WIDE: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f], [0x2e80, 0x303e], [0x3041, 0x33ff], [0x3400, 0x4dbf], [0x4e00, 0x9fff], [0xa000, 0xa4cf],
  [0xac00, 0xd7a3], [0xf900, 0xfaff], [0xfe30, 0xfe4f], [0xff00, 0xff60], [0xffe0, 0xffe6], [0x1f300, 0x1f64f],
  [0x1f900, 0x1f9ff], [0x20000, 0x3fffd],
];
// Combining marks and zero-width characters take none.
const ZERO: readonly (readonly [number, number])[] = [[0x0300, 0x036f], [0x200b, 0x200f], [0xfe00, 0xfe0f]];
const within = (ranges: readonly (readonly [number, number])[], cp: number) => ranges.some(([a, b]) => cp >= a && cp <= b);

/** The columns `text` takes in a terminal: wide characters count two, combining marks none. */
export function displayWidth(text: string): number {
  let width = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    width += within(ZERO, cp) ? 0 : within(WIDE, cp) ? 2 : 1;
  }
  return width;
}

/** A plain text table: a header row, then rows; columns padded to their widest cell, by terminal columns. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(displayWidth(h), ...rows.map((r) => displayWidth(r[i] ?? ''))));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat(Math.max(0, (widths[i] ?? 0) - displayWidth(c)))))
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
