/**
 * `holdfast exec <lock> -- <command>`: flock(1) across machines. Runs a command while holding a lock whose lease a
 * watchdog keeps renewed, hands the command its fencing token, forwards signals, and stops the command when the lock
 * is lost.
 *
 * @module
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants, hostname } from 'node:os';
import { AcquireTimeoutError, Holdfast, isHoldfastError, LockNotHeldError, RedisConnectionError, type HeldLock } from '../index.js';
import { CliError, CONNECTION_HELP, CONNECTION_OPTIONS, durationOption, EXIT, intOption, parse, UsageError, warn } from './common.js';
import { connect } from './connect.js';

export const EXEC_HELP = `Usage: holdfast exec <lock> [options] -- <command> [args…]

Runs <command> while holding the lock <lock> (like flock(1), but across machines). A watchdog keeps the lock's
lease renewed while the command runs, so a command may run for as long as it needs; if this process dies, the
lock frees itself within one lease.

The command gets in its environment:
  HOLDFAST_LOCK    the lock's name
  HOLDFAST_TOKEN   the fencing token of this hold: a number greater than every token handed out before for this
                   lock. Send it with your writes so that a resource can refuse a stale holder.

Options:
  -w, --wait <duration>    wait at most this long for the lock (default: as long as it takes; 0 = one attempt).
                           A bare number is seconds, as for flock -w: -w 10 waits 10 s, -w 500ms half a second
  -n, --no-wait            one attempt: fail at once if the lock is held (the same as --wait 0)
  -E, --conflict-exit-code <n>
                           exit code when the lock could not be had in time (default: 75)
  --lease <duration>       the lease the watchdog keeps, renewed every lease/3 (default: 30s, minimum 100ms). It
                           bounds how long the lock outlives a crashed holdfast process.
  --grace <duration>       when the lock is lost: time between SIGTERM and SIGKILL to the command (default: 5s)
${CONNECTION_HELP}

Signals: SIGINT, SIGTERM and SIGHUP are passed on to the command; holdfast waits for it, releases the lock and
exits with the command's code.

Exit codes:
  <n>    the command's own exit code (128 + N if it was killed by signal N)
  64     bad command line
  69     Redis unreachable (or the connection failed while waiting for the lock)
  75     --wait ran out (or -n found the lock held); --conflict-exit-code sets another code
  76     the lock was lost while the command ran (its lease ran out or someone ran unlock --force): the command
         was stopped with SIGTERM (SIGKILL after --grace); also when the lock was found lost at release
  126    the command could not be executed; 127: command not found

Examples:
  holdfast exec nightly-report -- ./make-report.sh --date today
  holdfast exec -n deploy -- ./deploy.sh                  # skip (exit 75) if a deploy is running
  holdfast exec -w 10 -E 0 cleanup -- ./cleanup.sh         # wait up to 10 s; if still held, exit 0
  REDIS_URL=redis://redis.internal:6379 holdfast exec --lease 10s migrate -- npm run migrate
  holdfast exec orders -- sh -c 'echo "token $HOLDFAST_TOKEN"'`;

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  wait: { type: 'string', short: 'w' },
  'no-wait': { type: 'boolean', short: 'n' },
  'conflict-exit-code': { type: 'string', short: 'E' },
  lease: { type: 'string' },
  grace: { type: 'string' },
} as const;

const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/** Runs `holdfast exec`; resolves the exit code. */
export async function execCommand(argv: string[]): Promise<number> {
  const dash = argv.indexOf('--');
  const own = dash < 0 ? argv : argv.slice(0, dash);
  const command = dash < 0 ? [] : argv.slice(dash + 1);
  const { values, positionals } = parse(own, OPTIONS, 'exec');
  if (values.help) {
    process.stdout.write(EXEC_HELP + '\n');
    return EXIT.OK;
  }
  const [name, ...extra] = positionals;
  if (name === undefined || name === '') throw new UsageError('exec needs a lock name', 'exec');
  if (extra.length > 0) throw new UsageError(`put the command after "--": holdfast exec ${name} -- ${extra.join(' ')}`, 'exec');
  if (command.length === 0 || command[0] === '') throw new UsageError('exec needs a command after "--"', 'exec');
  if (values['no-wait'] && values.wait !== undefined) throw new UsageError('give --wait or --no-wait, not both', 'exec');
  const wait = values['no-wait'] ? 0 : durationOption(values.wait, 'wait', 'exec', 0, 's');
  const lease = durationOption(values.lease, 'lease', 'exec', 100) ?? 30_000;
  const grace = durationOption(values.grace, 'grace', 'exec') ?? 5000;
  const connectTimeout = durationOption(values['connect-timeout'], 'connect-timeout', 'exec', 1) ?? 3000;
  const conflictCode = intOption(values['conflict-exit-code'], 'conflict-exit-code', 'exec', 0, 255) ?? EXIT.WAIT_TIMEOUT;

  // One handler for the whole run, so that no signal ever meets node's default (death with the lock held):
  // before the command runs a signal aborts the wait; while it runs, it is passed on; a second one during the
  // wait or the clean-up ends holdfast at once.
  const waitAbort = new AbortController();
  let child: ChildProcess | undefined;
  let earlySignal: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (child) {
      child.kill(signal);
      return;
    }
    if (earlySignal) process.exit(signalExitCode(signal));
    earlySignal = signal;
    waitAbort.abort(new CliError(`interrupted by ${signal} while waiting for "${name}"`, signalExitCode(signal)));
  };
  for (const s of FORWARDED) process.on(s, onSignal);
  try {
    return await holdAndRun();
  } finally {
    for (const s of FORWARDED) process.off(s, onSignal);
  }

  async function holdAndRun(): Promise<number> {
    const connection = await connect({ url: values.url, connectTimeout });
    const holdfast = new Holdfast({
      redis: connection.client,
      watchdogLease: lease,
      ...(values.prefix === undefined ? {} : { prefix: values.prefix }),
      commandTimeout: Math.min(5000, Math.max(50, Math.floor(lease / 3))),
      label: `${hostname().slice(0, 180)}:${process.pid}`, // what inspect and the dashboard show for this holder
    });
    const cleanup = async () => {
      // bounded: a half-open connection must not keep holdfast from exiting
      await Promise.race([holdfast.close().catch(() => {}), new Promise((r) => setTimeout(r, 2000).unref())]);
      await connection.close();
    };

    let held: HeldLock;
    const waitStarted = performance.now();
    try {
      if (earlySignal) throw waitAbort.signal.reason;
      held = await holdfast.lock(name!).acquire({ signal: waitAbort.signal, ...(wait === undefined ? {} : { timeout: wait }) });
    } catch (error) {
      await cleanup();
      // the last attempt of a wait gets what is left of it as its budget: a late reply then is a timeout too
      const ranOut = wait !== undefined && performance.now() - waitStarted >= wait;
      if (error instanceof AcquireTimeoutError || (ranOut && error instanceof RedisConnectionError)) {
        const message = wait === 0 ? `lock "${name}" is held (one attempt, no wait)` : `timed out after ${wait ?? 0} ms waiting for lock "${name}"`;
        throw new CliError(message, conflictCode, { cause: error });
      }
      if (error instanceof RedisConnectionError) throw new CliError(`Redis failed while waiting for "${name}": ${error.message}`, EXIT.REDIS_UNAVAILABLE, { cause: error });
      throw error;
    }
    const late = earlySignal as NodeJS.Signals | undefined; // set by the signal handler, so TypeScript cannot see it
    if (late) {
      // a signal arrived between the grant and here: give the lock back and stop
      await held[Symbol.asyncDispose]().catch(() => {});
      await cleanup();
      throw new CliError(`interrupted by ${late} while waiting for "${name}"`, signalExitCode(late));
    }

    const code = await runChild(command, held, grace, (c) => (child = c));
    child = undefined;
    let lost = held.lost;
    if (!lost) {
      try {
        await held.release();
      } catch (error) {
        if (error instanceof LockNotHeldError) {
          lost = true;
          warn(`lock "${name}" was no longer held when the command ended (${error.message}); exiting ${EXIT.LOCK_LOST}`);
        } else {
          warn(`could not release "${name}": ${error instanceof Error ? error.message : String(error)} (its lease frees it)`);
        }
      }
    }
    await cleanup();
    return lost ? EXIT.LOCK_LOST : code;
  }
}

/** Runs the command under `held`; resolves its exit code (or the code for "could not start it"). */
function runChild(command: string[], held: HeldLock, grace: number, started: (child: ChildProcess) => void): Promise<number> {
  const [file, ...args] = command as [string, ...string[]];
  return new Promise<number>((resolve) => {
    let child: ChildProcess;
    let killTimer: NodeJS.Timeout | undefined;
    const onLost = () => {
      const reason = held.signal.reason as Error | undefined;
      warn(`${reason?.message ?? `lock "${held.name}" was lost`}: stopping the command (SIGTERM, then SIGKILL after ${grace} ms)`);
      child.kill('SIGTERM');
      killTimer = setTimeout(() => child.kill('SIGKILL'), grace);
    };
    let finished = false;
    const done = (code: number) => {
      if (finished) return;
      finished = true;
      held.signal.removeEventListener('abort', onLost);
      clearTimeout(killTimer);
      resolve(code);
    };
    try {
      child = spawn(file, args, {
        stdio: 'inherit',
        env: { ...process.env, HOLDFAST_LOCK: held.name, HOLDFAST_TOKEN: String(held.token) },
      });
    } catch (error) {
      warn(`cannot run ${file}: ${error instanceof Error ? error.message : String(error)}`);
      resolve(EXIT.CANNOT_EXECUTE);
      return;
    }
    started(child);
    child.once('error', (error: NodeJS.ErrnoException) => {
      // spawn failures arrive here; a failed kill() of a running child also would: ignore those
      if (child.pid !== undefined) return;
      warn(error.code === 'ENOENT' ? `command not found: ${file}` : `cannot run ${file}: ${error.message}`);
      done(error.code === 'ENOENT' ? EXIT.COMMAND_NOT_FOUND : EXIT.CANNOT_EXECUTE);
    });
    child.once('exit', (code, signal) => done(code ?? (signal ? signalExitCode(signal) : EXIT.INTERNAL)));
    if (held.signal.aborted) onLost();
    else held.signal.addEventListener('abort', onLost, { once: true });
  });
}

/** True for errors that mean "Redis is gone" anywhere in the CLI. */
export function isConnectionError(error: unknown): boolean {
  return isHoldfastError(error) && error.code === 'REDIS_CONNECTION';
}
