/**
 * The client side of one lease: when it must be treated as gone, its renewal (the watchdog) and its loss signal.
 *
 * Deadlines are computed from the moment the request that set the lease was *sent* (monotonic clock), minus a
 * drift allowance, so the local deadline falls before Redis can expire the key: the signal aborts before another
 * owner could get the lock, as long as the process is not paused. Timers are unref'd and never throw.
 */
import { LockLostError, type LockLostReason } from '../errors.js';
import { now } from './clock.js';
import { TimerQueue, type Due, type TimerEntry } from './timer-queue.js';

/** The one timer queue every lease of this process shares. */
const timers = new TimerQueue(now);

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
  /**
   * The first lease, when Redis set a shorter one than `leaseMs` before the holder could confirm its own (a fair
   * lock's hand-off, counted from the waiter's last queued attempt): the deadline starts at `sentAt + firstLeaseMs`.
   * @default leaseMs
   */
  firstLeaseMs?: number | undefined;
  /** Extends the lease in Redis: true if still ours, false if not. Throws on connection trouble. */
  renew: (leaseMs: number) => Promise<boolean>;
  /** Called once when the lease is lost (not when it is stopped). */
  onLost: (error: LockLostError) => void;
}

/** Time kept back from every lease for clock drift between this process and Redis: 1 % + 2 ms. */
export function driftOf(leaseMs: number): number {
  return Math.floor(leaseMs * 0.01) + 2;
}

/** The shortest lease holdfast accepts: the least that leaves a grant 1 ms of validity after {@link driftOf}. */
export const MIN_LEASE_MS = 3;

/**
 * `leaseMs`, when a grant under it can ever be counted on: a lease no longer than the drift allowance leaves none, so
 * every grant would come too late and be undone, again and again.
 * @throws {RangeError} for a lease shorter than {@link MIN_LEASE_MS}, saying why and what to do
 */
export function checkLease(leaseMs: number, what: string): number {
  if (leaseMs - driftOf(leaseMs) < 1) {
    throw new RangeError(
      `${what} (${leaseMs} ms) is no longer than the ${driftOf(leaseMs)} ms kept back for clock drift (2 ms + 1 %): a grant could never be counted on. Use at least ${MIN_LEASE_MS} ms, and more than a round trip to the store`,
    );
  }
  return leaseMs;
}

/**
 * The one validity rule of every lease, the hold engine's and Redlock's alike: a lease of `leaseMs` set by a request
 * sent at `sentAt` (monotonic) counts until `sentAt + leaseMs − drift`. An infinite lease never ends.
 */
export function deadlineOf(sentAt: number, leaseMs: number): number {
  return leaseMs === Infinity ? Infinity : sentAt + leaseMs - driftOf(leaseMs);
}

/**
 * ms of validity left now (Redlock's `lease − elapsed − drift`) of a lease of `leaseMs` set by a request sent at
 * `sentAt`: a grant whose reply comes with none left (≤ 0) is no grant. See {@link deadlineOf}.
 */
export function validityLeft(sentAt: number, leaseMs: number, at: number = now()): number {
  return deadlineOf(sentAt, leaseMs) - at;
}

export class Lease implements Due {
  // Created on first use of `signal`: most holds are released without anyone looking at it.
  #controller: AbortController | undefined;
  #lostWith: LockLostError | undefined;
  readonly #opts: LeaseOptions;
  #deadline: number;
  /** When the watchdog renews next (Infinity: no renewal due, or one in flight). */
  #renewAt: number;
  /** One entry in the shared timer queue per lease, due at the earlier of the next renewal and the deadline. */
  #timer: TimerEntry | undefined;
  #timerAt = Infinity;
  #stopped = false;
  /** Releases of this hold in flight (see `#renew`). */
  releasing = 0;
  /** Set once renewal was ended for good (a release that could not reach Redis): a late renewal reply changes nothing. */
  #renewalEnded = false;
  /** Set by {@link Lease.fix}: the watchdog was stopped on purpose, so running out is an expiry, not a failed renewal. */
  #fixed = false;
  /** The lease length Redis was last told to keep (the watchdog's, or the last `extend`). */
  #ttlMs: number;
  /** Set by {@link Lease.suspend} while a release that may end the hold is on its way: no renewal is sent. */
  #suspended = false;
  /** The renewal in flight, if any: a release waits for it before it is sent. */
  #inFlight: Promise<void> | undefined;

  constructor(opts: LeaseOptions) {
    this.#opts = opts;
    this.#ttlMs = opts.leaseMs;
    const first = opts.firstLeaseMs ?? opts.leaseMs;
    // An infinite lease (a permit that persists until released) has no deadline.
    this.#deadline = deadlineOf(opts.sentAt, first);
    this.#renewAt = opts.renewEveryMs === undefined ? Infinity : opts.sentAt + opts.renewEveryMs;
    this.#arm();
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
  /** The lease length Redis was last told to keep, in ms: the longest the key can outlive its last renewal. */
  get ttlMs(): number {
    return this.#ttlMs;
  }

  /**
   * Ends renewal for good, without aborting: the lease now runs out by itself within one lease (a release that could
   * not reach Redis must never leave a watchdog keeping the lock alive).
   */
  endRenewal(): void {
    this.#renewalEnded = true;
    this.#renewAt = Infinity;
  }

  /**
   * The release rule "a release is final", for every primitive: before a release that may end the hold is sent, the
   * watchdog sends no more renewals, and a renewal already in flight settles first. So no renewal of this hold runs
   * after its release in Redis, and none can set a released key again (the Redlock renewal takes a key back on a node
   * that lost it: only while the hold is live). Resolves once no renewal is in flight. {@link Lease.resume} undoes it
   * when the release leaves the hold held here.
   */
  suspend(): Promise<void> {
    this.#suspended = true;
    this.#renewAt = Infinity;
    return this.#inFlight ?? Promise.resolve();
  }

  /** Renewal goes on after {@link Lease.suspend} (the release left holds here, or did not run): one renewal at once. */
  resume(): void {
    if (!this.#suspended) return;
    this.#suspended = false;
    if (!this.renewing) return;
    this.#renewAt = now();
    this.#arm();
  }

  /** True while the watchdog renews this lease (not for a fixed lease, nor after {@link Lease.fix} or a failed release). */
  get renewing(): boolean {
    return this.#opts.renewEveryMs !== undefined && !this.#renewalEnded && !this.#stopped;
  }

  /**
   * Stops the watchdog for good and keeps the lease fixed from now on: it runs out at the deadline of the last
   * confirmed renewal unless extended (`extend`), and running out is then an `expired` loss. A renewal in flight
   * still renews in Redis, but its reply no longer moves the deadline (the local deadline stays the earlier one).
   */
  fix(): void {
    if (!this.renewing) return;
    this.#fixed = true;
    this.endRenewal();
  }

  /**
   * Records that Redis confirmed a lease of `leaseMs` at a request sent at `sentAt`. Never shortens the deadline, unless
   * `exact` (an explicit `extend(ms)` that *set* a shorter TTL in Redis: the signal must fire before that one lapses).
   */
  confirm(sentAt: number, leaseMs: number, exact = false): void {
    if (this.#stopped) return;
    this.#ttlMs = leaseMs;
    const deadline = deadlineOf(sentAt, leaseMs);
    if (deadline > this.#deadline) {
      this.#deadline = deadline;
    } else if (exact && deadline < this.#deadline) {
      this.#deadline = deadline;
      this.#arm(); // the armed timer is due later than the new deadline
    }
  }

  /** Stops the timer without aborting: the lease ended because it was released. */
  stop(): void {
    this.#stopped = true;
    timers.cancel(this.#timer);
    this.#timer = undefined;
  }

  /** Marks the lease lost: stops the timer, aborts the signal, tells the owner once. */
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

  /** (Re)arms the one timer for the earlier of the next renewal and the deadline. */
  #arm(): void {
    if (this.#stopped) return;
    const at = Math.min(this.#renewAt, this.#deadline);
    if (this.#timer && at >= this.#timerAt) return; // the armed timer comes first; due() re-arms
    timers.cancel(this.#timer);
    this.#timerAt = at;
    this.#timer = timers.add(at, this);
  }

  /**
   * True when the deadline has passed at `at`: the lease is then marked lost at once, as its timer would (a hold past
   * its deadline is never handed out, even before its timer turn comes).
   */
  lapsed(at: number = now()): boolean {
    if (at < this.#deadline) return false;
    this.lose(this.#lossAtDeadline());
    return true;
  }

  /** Why a lease that reached its deadline is lost: it was meant to run out, or the watchdog did not get through. */
  #lossAtDeadline(): LockLostReason {
    return this.#opts.renewEveryMs === undefined || this.#fixed ? 'expired' : 'renewal-failed';
  }

  /** @internal Called by the timer queue. */
  due(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    const t = now();
    if (t >= this.#deadline) {
      this.lose(this.#lossAtDeadline());
      return;
    }
    if (t >= this.#renewAt) void this.#renew();
    this.#arm();
  }

  #renew(): Promise<void> {
    const renewal = this.#renewOnce().finally(() => {
      if (this.#inFlight === renewal) this.#inFlight = undefined;
    });
    this.#inFlight = renewal;
    return renewal;
  }

  async #renewOnce(): Promise<void> {
    this.#renewAt = Infinity; // one renewal in flight at a time
    const sentAt = now();
    const every = this.#opts.renewEveryMs ?? this.#opts.leaseMs;
    try {
      const stillOurs = await this.#opts.renew(this.#opts.leaseMs);
      if (this.#stopped || this.#renewalEnded) return;
      if (!stillOurs) {
        // A release of ours ran before this renewal did: the key is gone because we gave it up, not lost. The release
        // settles the hold; if it leaves holds, renewal goes on.
        if (this.releasing > 0) {
          this.#renewAt = this.#suspended ? Infinity : sentAt + every;
          this.#arm();
          return;
        }
        this.lose(sentAt >= this.#deadline ? 'expired' : 'taken-over');
        return;
      }
      this.confirm(sentAt, this.#opts.leaseMs);
      this.#renewAt = sentAt + every;
    } catch (error) {
      if (this.#stopped || this.#renewalEnded) return;
      // Try again soon, while the lease lasts; the deadline fires if no renewal gets through in time.
      const left = this.#deadline - now();
      if (left <= 0) {
        this.lose('connection', error);
        return;
      }
      this.#renewAt = now() + Math.max(10, Math.min(every, Math.floor(left / 3)));
    }
    if (this.#suspended) this.#renewAt = Infinity; // a release is on its way: nothing more until it says so
    this.#arm();
  }
}
