/**
 * The `holdfast` command: run a command under a lock (`exec`), see and clear locks (`inspect`, `list`,
 * `unlock --force`, `dashboard`), see run-once jobs (`jobs`), and show five common Redis lock schemes break under
 * faults (`demo`).
 *
 * @module
 */
import { createRequire } from 'node:module';
import { isHoldfastError } from '../index.js';
import { CliError, EXIT, out, UsageError, warn } from './common.js';
import { demoCommand } from './demo/run.js';
import { demoWorker } from './demo/worker.js';
import { dashboardCommand } from './dashboard.js';
import { execCommand } from './exec.js';
import { inspectCommand, listCommand, unlockCommand } from './inspect.js';
import { jobsCommand } from './jobs.js';
import { migrateCommand } from './migrate.js';

const HELP = `Usage: holdfast <command> [options]

Distributed locks on Redis (and PostgreSQL), from the shell.

Commands:
  exec <lock> -- <cmd…>    run a command while holding a lock (flock across machines); the fencing token is in
                           $HOLDFAST_TOKEN; the command is stopped if the lock is lost
  inspect <name>           who holds it, any kind (lock, fair lock, read-write lock, semaphore, latch, job, election):
                           owner, label, hold count, remaining lease, fencing token, waiters
  list                     everything held now under the prefix
  unlock --force <name>    free it whoever holds it, and wake its waiters
  jobs                     run-once jobs: last tick run, by which instance, how long, errors, running now
  dashboard                a live web page of the locks under a prefix (read-only unless --allow-unlock)
  demo                     five common Redis lock schemes and holdfast, side by side under faults
  migrate                  install or upgrade holdfast's schema in PostgreSQL (or --print its SQL)

Run \`holdfast <command> --help\` for a command's options and examples.
Redis: --url, else $REDIS_URL, else redis://127.0.0.1:6379 (password in the URL, $REDISCLI_AUTH or
$HOLDFAST_PASSWORD). Errors are one line on stderr; --verbose adds the stack.

Examples:
  holdfast exec nightly-report -- ./make-report.sh
  holdfast inspect nightly-report --json
  holdfast list --match 'orders:*'
  holdfast demo`;

const COMMANDS: Record<string, (argv: string[]) => Promise<number>> = {
  exec: execCommand,
  inspect: inspectCommand,
  list: listCommand,
  unlock: unlockCommand,
  jobs: jobsCommand,
  dashboard: dashboardCommand,
  demo: demoCommand,
  migrate: migrateCommand,
  __demo_worker: demoWorker,
};

/** The commands a user can type, in the order the help lists them. */
const PUBLIC_COMMANDS = Object.keys(COMMANDS).filter((c) => !c.startsWith('__'));

function version(): string {
  try {
    // dist/cli/main.js and src/cli/main.ts both sit two levels below package.json
    return (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
  } catch {
    return 'unknown';
  }
}

/** Runs the command line; resolves the exit code. Never throws. */
export async function main(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const verbose = (dash < 0 ? argv : argv.slice(0, dash)).includes('--verbose');
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      const topic = command === 'help' ? rest[0] : undefined;
      if (topic && COMMANDS[topic]) return await COMMANDS[topic](['--help']);
      out(HELP);
      return command === undefined ? EXIT.USAGE : EXIT.OK;
    }
    if (command === '--version' || command === '-V') {
      out(version());
      return EXIT.OK;
    }
    const run = COMMANDS[command.replace(/-/g, '_')];
    if (!run || command === '__demo_worker') throw new UsageError(`unknown command "${command}" (commands: ${PUBLIC_COMMANDS.join(', ')})`);
    return await run(rest);
  } catch (error) {
    if (verbose && error instanceof Error) process.stderr.write((error.stack ?? error.message) + '\n');
    if (error instanceof CliError) {
      warn(error.message);
      return error.exitCode;
    }
    if (isHoldfastError(error) && error.code === 'REDIS_CONNECTION') {
      warn(`Redis failed: ${error.message}`);
      return EXIT.REDIS_UNAVAILABLE;
    }
    if (error instanceof TypeError || error instanceof RangeError) {
      warn(error.message);
      return EXIT.USAGE;
    }
    warn(`${error instanceof Error ? error.message : String(error)}${verbose ? '' : ' (--verbose for details)'}`);
    return EXIT.INTERNAL;
  }
}

const code = await main(process.argv.slice(2));
// Flush stdout before leaving: a pipe to `jq` must get every byte.
process.stdout.write('', () => process.exit(code));
