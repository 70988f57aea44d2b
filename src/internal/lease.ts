/**
 * The client side of one lease: when it must be treated as gone, its renewal (the watchdog) and its loss signal.
 *
 * Deadlines are computed from the moment the request that set the lease was *sent* (monotonic clock), minus a
 * drift allowance, so the local deadline falls before Redis can expire the key: the signal aborts before another
 * owner could get the lock, as long as the process is not paused. Timers are unref'd and never throw.
 */
import { LockLostError, type LockLostReason } from '../errors.js';
import { now } from './clock.js';

/** How a lease is kept. */
export interface LeaseOptions {
  /** The lock's name, for errors. */
  name: string;
  /** Lease length in ms. */
  leaseMs: number;
  /** Renew every `renewEveryMs` (watchdog) or `undefined` for a fixed lease that simply runs out. */
  renewEveryMs: number | undefined;
  /** Monotonic time at which the request that set the lease was sent. */
  sentAt: number;
  /** Extends the lease in Redis: true if still ours, false if not. Throws on connection trouble. */
  renew: (leaseMs: number) => Promise<boolean>;
  /** Called once when the lease is lost (not when it is stopped). */
  onLost: (error: LockLostError) => void;
}

/** Time kept back from every lease for clock drift between this process and Redis: 1 % + 2 ms. */
export function driftOf(leaseMs: number): number {
  return Math.floor(leaseMs * 0.01) + 2;
}

export class Lease {
  // Created on first use of `signal`: most holds are released without anyone looking at it.
  #controller: AbortController | undefined;
  #lostWith: LockLostError | undefined;
  readonly #opts: LeaseOptions;
  #deadline: number;
  #expiryTimer: NodeJS.Timeout | undefined;
  #renewTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #renewing = false;

  constructor(opts: LeaseOptions) {
    this.#opts = opts;
    this.#deadline = opts.sentAt + opts.leaseMs - driftOf(opts.leaseMs);
    this.#armExpiry();
    this.#scheduleRenewal(opts.renewEveryMs);
  }

  /** Aborts with a {@link LockLostError} when the lease is lost. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#lostWith) this.#controller.abort(this.#lostWith);
    }
    return this.#controller.signal;
  }
  /** True once lost. */
  get lost(): boolean {
    return this.#lostWith !== undefined;
  }
  /** True once stopped (released) or lost. */
  get done(): boolean {
    return this.#stopped;
  }
  /** Monotonic time by which the lease must be treated as gone. */
  get deadline(): number {
    return this.#deadline;
  }
  /** The lease length in ms. */
  get leaseMs(): number {
    return this.#opts.leaseMs;
  }

  /** Records that Redis confirmed a lease of `leaseMs` at a request sent at `sentAt`. Never shortens the deadline. */
  confirm(sentAt: number, leaseMs: number): void {
    if (this.#stopped) return;
    const deadline = sentAt + leaseMs - driftOf(leaseMs);
    if (deadline > this.#deadline) {
      this.#deadline = deadline;
      this.#armExpiry();
    }
  }

  /** Stops timers without aborting: the lease ended because it was released. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#expiryTimer);
    clearTimeout(this.#renewTimer);
  }

  /** Marks the lease lost: stops timers, aborts the signal, tells the owner once. */
  lose(reason: LockLostReason, cause?: unknown): void {
    if (this.lost) return;
    this.stop();
    const error = new LockLostError(this.#opts.name, reason, cause === undefined ? undefined : { cause });
    this.#lostWith = error;
    this.#controller?.abort(error);
    try {
      this.#opts.onLost(error);
    } catch {
      /* a listener's bug must not escape a timer */
    }
  }

  #armExpiry(): void {
    clearTimeout(this.#expiryTimer);
    const left = this.#deadline - now();
    this.#expiryTimer = setTimeout(() => {
      if (this.#stopped) return;
      if (now() >= this.#deadline) this.lose(this.#opts.renewEveryMs === undefined ? 'expired' : 'renewal-failed');
      else this.#armExpiry();
    }, Math.max(0, Math.ceil(left)));
    this.#expiryTimer.unref();
  }

  #scheduleRenewal(delay: number | undefined): void {
    if (delay === undefined || this.#stopped) return;
    clearTimeout(this.#renewTimer);
    this.#renewTimer = setTimeout(() => void this.#renewNow(), delay);
    this.#renewTimer.unref();
  }

  async #renewNow(): Promise<void> {
    if (this.#stopped || this.#renewing) return;
    this.#renewing = true;
    const sentAt = now();
    const every = this.#opts.renewEveryMs ?? this.#opts.leaseMs;
    try {
      const stillOurs = await this.#opts.renew(this.#opts.leaseMs);
      if (this.#stopped) return;
      if (!stillOurs) {
        this.lose(sentAt >= this.#deadline ? 'expired' : 'taken-over');
        return;
      }
      this.confirm(sentAt, this.#opts.leaseMs);
      this.#scheduleRenewal(every);
    } catch (error) {
      if (this.#stopped) return;
      // Try again soon, while the lease lasts; the expiry timer fires if it never succeeds in time.
      const left = this.#deadline - now();
      if (left <= 0) this.lose('connection', error);
      else this.#scheduleRenewal(Math.max(10, Math.min(every, Math.floor(left / 3))));
    } finally {
      this.#renewing = false;
    }
  }
}
