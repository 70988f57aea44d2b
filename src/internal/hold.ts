/**
 * The one hold engine under every owner-held, leased primitive (the lock, the fair lock, the read and the write
 * lock, expirable permits, Redlock): one {@link Hold} per owner with its {@link Lease} (watchdog or fixed) and loss
 * signal, re-entries that share it, one release path with one retry rule, `extend`, and `close()` support. A
 * primitive supplies its scripts as {@link HoldOps}; everything else is written here once.
 *
 * The release rule, for every primitive:
 * - A release that may end the hold stops the watchdog before it is sent, and waits for a renewal in flight: no
 *   renewal runs after it, so a released lock stays released.
 * - A release is sent with a request id; a try whose reply was lost is sent again (up to 3 tries) and reports what
 *   the first run did. A reply that came across a reconnect (the client may have resent the command itself) is read
 *   the same way. A "not held" such a try finds reads as released only while the hold's deadline has not passed;
 *   past it, the first try may never have reached Redis, and `release()` rejects with `LockNotHeldError` (see
 *   `Hold.#send`).
 * - A release that cannot reach Redis never keeps the lock alive: renewal ends at the first failed try, so the lock
 *   frees by itself within one lease. A try that a Redis Cluster slot in migration refused did not run and is not
 *   counted while the lease lasts. After the last try the hold is given up (its `signal` aborts with reason
 *   `release-failed`), `release()` rejects with a `ReleaseFailedError` saying by when the lock is free at the latest,
 *   and the release goes on in the background (every hold of the owner at once) until it lands or the lease has
 *   run out. A later `release()` tries again.
 *
 * What the rest of holdfast may use: a primitive gets its holds from a {@link HoldTable} (`held`, `heldEach`, `adopt`,
 * `get`, `claimOf`, `settle`; `ops` to release every hold of an owner) and wraps each in a {@link LeasedHeld}. Of a
 * {@link Hold} it reads `owner`, `token`, `fingerprint`, `active`, `settled`, `deadline` and `leaseMs`, and may end it
 * with `closeHold()`; the fair lock drives its hand-off's claim with `startClaim`, `validAt`, `confirmClaim` and
 * `loseClaim`. The rest of a hold's state (its hold count, lease, claim, a release given up, its live-set slot) is
 * private: it changes only through the methods of this module, so every rule above is enforced here and nowhere else.
 */
import type { Closable } from '../core.js';
import { liveSlot, type LiveSet } from './live-set.js';
import { LockLostError, LockNotHeldError, RedisConnectionError, ReleaseFailedError, type LockLostReason } from '../errors.js';
import { RELEASE_REPLY } from '../lua/codes.js';
import { didNotRun } from '../script.js';
import { now } from './clock.js';
import { Held } from './held.js';
import { checkLease, deadlineOf, Lease, validityLeft } from './lease.js';
import { backoff, BACKGROUND_BACKOFF, RELEASE_BACKOFF } from './backoff.js';
import { fingerprint } from '../diagnostics.js';
import { kindOf, publishLost, traceRenew, type HeldFacts, type TracedHold } from './trace.js';
import { optDuration } from './validate.js';

/** The atomic operations a primitive supplies for the holds of one name. */
export interface HoldOps {
  /** The primitive's name, for errors. */
  readonly name: string;
  /** What it is, for messages: `lock`, `fair lock`, `read lock`, `write lock`, `permit`, `redlock`. */
  readonly kind: string;
  /** Sets `owner`'s lease to `leaseMs` from now: true if `owner` still holds it, false if not; throws when unsure. */
  renew(owner: string, leaseMs: number): Promise<boolean>;
  /**
   * One run of the release of one hold of `owner`: the holds left (0 = released), -1 when `owner` does not hold it,
   * -2 when holds would remain and `marker` is missing (the engine then sends it again with one, see
   * {@link HoldOps.newMarker}). `mode`: '0', or '2' for a retry of a request whose reply was lost (the operation then
   * reports what an earlier run of the same request did, by its marker). A primitive without markers ignores both.
   */
  release(owner: string, mode: '0' | '2', marker: string | undefined): Promise<number>;
  /** A new release marker's name, for a primitive whose release can answer -2 (see {@link HoldOps.release}). */
  newMarker?(): string;
  /** Releases every hold of `owner` at once (client close, a lost reply, a failed release). */
  releaseAll(owner: string): Promise<unknown>;
  /** Errors after which a request may be sent again. @default a `RedisConnectionError` */
  readonly isTransient?: (error: unknown) => boolean;
  /**
   * What Redis holds for `owner` now: its hold count and fencing token, or `null` when `owner` does not hold it. A
   * primitive that supplies it can be adopted by owner id (see {@link HoldTable.adopt}).
   */
  readonly inspectOwner?: (owner: string) => Promise<{ holdCount: number; token: number } | null>;
}

/** Where holds live: a holdfast client's core, or a Redlock. */
export interface HoldHost {
  /** The live holds, which `close()` releases. */
  readonly holds: LiveSet<Closable>;
  /** Tells the user a hold was lost (the `lockLost` event). */
  emitLost(error: LockLostError): void;
  /** The watchdog's renewal period, in ms. */
  readonly watchdogInterval: number;
  /** Counts reconnects of the client, when it can resend commands by itself (see `RedisTransport.epoch`). */
  epoch?(): number | undefined;
}

/**
 * One request that releases one hold of `owner`: every try of it carries the same marker. `send(retry)` runs it once
 * and returns the holds left (0 = released) or -1 when `owner` does not hold it; `retry` is true for every try after
 * the first. The marker is made only when it is needed: the last hold of an owner here goes without one (it frees
 * the lock, and a retry of a full release needs no marker: it finds the lock gone). Should holds remain after all
 * (the owner id also holds it elsewhere), the operation changes nothing and answers -2, and the request is sent again,
 * from then on with a marker. `holdsHere`: the owner's acquisitions here not yet released (1: this release most
 * likely frees it).
 */
function releaseRequest(ops: HoldOps, owner: string, holdsHere: number): (retry: boolean) => Promise<number> {
  let marker = holdsHere > 1 ? ops.newMarker?.() : undefined;
  const run = (retry: boolean): Promise<number> =>
    ops.release(owner, retry ? '2' : '0', marker).then((left) => {
      if (left !== RELEASE_REPLY.MARKER_NEEDED || marker !== undefined || !ops.newMarker) return left;
      marker = ops.newMarker();
      return run(retry);
    });
  return run;
}

/** The key of {@link HoldTable}'s method that drops a hold: not exported, so only a {@link Hold} of this module calls it. */
const forget: unique symbol = Symbol('forget');

/** Tries a request gets before its release is given up to the background. */
const RELEASE_TRIES = 3;

const isConnectionError = (error: unknown): boolean => error instanceof RedisConnectionError;

/** A release that may answer only an earlier run, come past the hold's deadline (see `Hold.#send`). */
class LeaseLapsed extends Error {}

/**
 * A grant whose reply came after its lease was over (see {@link HoldTable.held}): no grant. It never reaches the
 * user: the wait loop reads it as a busy attempt once `undone` (the undo of the grant) has settled.
 */
export class LateGrant extends Error {
  constructor(
    name: string,
    /** How long the reply took, in ms. */
    readonly tookMs: number,
    /** Settles once the grant was undone (or the undo failed: the lease bounds it). */
    readonly undone: Promise<void>,
    /** The lease asked for, in ms. */
    readonly leaseMs: number,
  ) {
    super(`the grant of "${name}" came ${Math.round(tookMs)} ms after its request, past its lease: not held`);
    this.name = 'LateGrant';
  }
}

/** A release given up to the background after its tries failed. */
interface Abandoned {
  /** By when the lock is free at the latest (wall clock). */
  readonly freeBy: Date;
  /** Set once a background try landed. */
  landed: boolean;
}

/**
 * One owner's hold of one name in this process, shared by its reentrant acquisitions. Its state (the hold count, the
 * lease, a hand-off's claim, a release given up, its live-set slot) is its own: it changes only through the methods
 * below, each the one way a step of a hold's life happens.
 */
export class Hold implements Closable, TracedHold {
  readonly #lease: Lease;
  /** Acquisitions of this owner here that are not released yet. */
  #holds = 1;
  /** A claim of a fair-lock hand-off still on its way to Redis: re-entries and the release wait for it. */
  #claim: Promise<void> | undefined;
  /** Set when a release could not reach Redis: the hold was given up. */
  #abandoned: Abandoned | undefined;
  /** Its slot in the host's live holds (see `LiveSet`). */
  [liveSlot]: number | undefined = undefined;
  #fingerprint: string | undefined;

  /**
   * The first acquisition of `owner` here, confirmed by Redis for a request sent at `sentAt` (see {@link HoldTable.held}
   * for the arguments): starts its lease; the table records it.
   */
  constructor(
    readonly table: HoldTable,
    readonly owner: string,
    /** The fencing token of this hold (0 where the primitive has none). */
    readonly token: number,
    sentAt: number,
    leaseMs: number,
    watchdog: boolean,
    firstLeaseMs: number | undefined,
  ) {
    const { ops, host } = table;
    this.#lease = new Lease({
      name: ops.name,
      leaseMs,
      renewEveryMs: watchdog ? host.watchdogInterval : undefined,
      sentAt,
      firstLeaseMs,
      renew: (ms) => traceRenew(ops.kind, ops.name, this, ms, 'watchdog', () => ops.renew(owner, ms)),
      onLost: (error: LockLostError) => {
        table[forget](this);
        publishLost(ops.kind, ops.name, this, error);
        host.emitLost(error);
      },
    });
  }

  /** True while held here: acquired, not released, not lost. */
  get active(): boolean {
    return this.#holds > 0 && !this.#lease.done;
  }

  /** True once released by other means than a `release()` of its held objects (a permit released by id): not lost, not held. */
  get settled(): boolean {
    return this.#lease.done && !this.#lease.lost && this.#holds === 0;
  }

  /** The owner's fingerprint, for the diagnostics channels: hashed on first use, then kept. */
  get fingerprint(): string {
    return (this.#fingerprint ??= fingerprint(this.owner));
  }

  /** Aborts, with a `LockLostError` as its reason, the moment the hold can no longer be counted on. */
  get signal(): AbortSignal {
    return this.#lease.signal;
  }

  /** True once lost (not when released). */
  get lost(): boolean {
    return this.#lease.lost;
  }

  /** True while the watchdog renews the lease. */
  get renewing(): boolean {
    return this.#lease.renewing;
  }

  /** Monotonic time by which the hold must be treated as gone (see `Lease.deadline`). */
  get deadline(): number {
    return this.#lease.deadline;
  }

  /** The lease length in ms. */
  get leaseMs(): number {
    return this.#lease.leaseMs;
  }

  /** The claim of a fair-lock hand-off still on its way to Redis, if any: re-entries and the release wait for it. */
  get claim(): Promise<void> | undefined {
    return this.#claim;
  }

  /**
   * True when the hold is over at `at` (monotonic): released, lost, or past its deadline. A hold past its deadline is
   * lost now, as its timer would tell a moment later: it is never handed out again.
   */
  ended(at: number = now()): boolean {
    return this.#lease.done || this.#lease.lapsed(at);
  }

  /**
   * One more acquisition of this owner, confirmed by Redis for a request sent at `sentAt`: counted, and the lease
   * moved out. False, with nothing counted, when the hold has {@link Hold.ended}: the table then makes a new one.
   */
  join(sentAt: number, leaseMs: number): boolean {
    if (this.ended()) return false;
    this.#lease.confirm(sentAt, leaseMs);
    this.#holds++;
    return true;
  }

  /**
   * Starts the claim of a hand-off this hold holds from its message (a fair lock's), once the holder's own code has
   * run: its release and its re-entries wait for it, so Redis sees the claim first. `run` ends it with
   * {@link Hold.confirmClaim} or {@link Hold.loseClaim}.
   */
  startClaim(run: () => Promise<void>): void {
    this.#claim = new Promise<void>((resolve) => setImmediate(resolve)).then(run).finally(() => {
      this.#claim = undefined;
    });
  }

  /** True while the hold is neither released nor lost and its lease still runs at `at` (monotonic): a claim may be sent again. */
  validAt(at: number): boolean {
    return !this.#lease.done && at < this.#lease.deadline;
  }

  /** The claim landed: Redis set the full lease of `leaseMs` for a request sent at `sentAt`. */
  confirmClaim(sentAt: number, leaseMs: number): void {
    this.#lease.confirm(sentAt, leaseMs);
  }

  /** The claim failed (`cause`: its error): the hold is lost with `reason` (its signal aborts, the user is told). */
  loseClaim(reason: LockLostReason, cause?: unknown): void {
    this.#lease.lose(reason, cause);
  }

  /** Stops the watchdog and keeps the hold on a fixed lease from now on (see `LeasedHeld.stopRefresh`). */
  stopRefresh(): void {
    this.#lease.fix();
  }

  /** Released here by other means (a permit by id): its watchdog stops, and its `release()` has nothing left to do. */
  settle(): void {
    this.#holds = 0;
    this.#lease.stop();
    this.table[forget](this);
  }

  async closeHold(): Promise<void> {
    await this.#claim;
    this.#lease.stop();
    try {
      await this.table.ops.releaseAll(this.owner);
    } finally {
      this.#lease.lose('client-closed');
    }
  }

  /** A new release request for one acquisition of this hold. */
  request(): ReleaseRequest {
    return { send: releaseRequest(this.table.ops, this.owner, this.#holds), sent: false, heldWhenSent: undefined };
  }

  /**
   * Releases one acquisition (see the module's release rule).
   * @throws {LockNotHeldError} when the hold was lost before the release
   * @throws {ReleaseFailedError} when Redis could not be reached
   */
  async release(request: ReleaseRequest): Promise<void> {
    if (this.#claim) await this.#claim; // a fair-lock hand-off's claim first: the release script needs the hold counted in Redis
    if (this.#abandoned) return this.#retryAbandoned(this.#abandoned);
    const { ops, host } = this.table;
    const lease = this.#lease;
    // A release is final: before one that may end the hold goes out, renewal stops and a renewal in flight settles
    // (see `Lease.suspend`); renewal goes on only if the hold is still held here afterwards.
    if (this.#holds <= 1) await lease.suspend();
    const lostBefore = lease.lost; // released all the same (to clean up), but reported as not held
    request.heldWhenSent ??= !lostBefore && now() < lease.deadline;
    const transient = ops.isTransient ?? isConnectionError;
    let left: number;
    lease.releasing++; // a renewal that runs after this release finds the key gone: not a loss
    try {
      for (let failed = 0; ; ) {
        try {
          left = await this.#send(request, host);
          break;
        } catch (error) {
          if (error instanceof LeaseLapsed) {
            this.#holds = Math.max(0, this.#holds - 1);
            lease.lose('expired');
            this.table[forget](this);
            throw new LockNotHeldError(
              ops.name,
              `${ops.kind} "${ops.name}" was not released by this owner: the lease lapsed before the release reached Redis`,
            );
          }
          if (!transient(error)) {
            lease.resume(); // the release did not happen: the hold goes on
            throw error;
          }
          lease.endRenewal(); // from the first failed try on, nothing keeps the lock alive
          // A Redis Cluster slot in migration refused the try (it did not run): the lock is held all the same, so the
          // release keeps trying until the lease runs out, whatever the number of tries.
          const refused = didNotRun(error) && lease.deadline !== Infinity && now() < lease.deadline;
          if (!refused && ++failed >= RELEASE_TRIES) return this.#giveUp(error);
          await backoff(RELEASE_BACKOFF, Math.max(1, failed));
        }
      }
    } finally {
      lease.releasing--;
    }
    this.#holds = Math.max(0, this.#holds - 1);
    if (left < 0 || lostBefore) {
      lease.lose('expired'); // forgets the hold (onLost); a no-op when it was lost already
      this.table[forget](this);
      const reason = (lease.signal.reason as LockLostError | undefined)?.reason ?? 'expired';
      const name = ops.name;
      throw new LockNotHeldError(name, `${ops.kind} "${name}" was no longer held by this owner when released (lost: ${reason})`);
    }
    if (left === 0 || this.#holds === 0) {
      lease.stop();
      this.table[forget](this);
    } else {
      lease.resume(); // holds remain here (a re-entry came meanwhile): renewal goes on
    }
  }

  /**
   * Sends one try of `request`. The rule for a "not held" (-1) that may answer an earlier run of the same request (a
   * retry after a lost reply, or a reply that came across a reconnect, which may answer the client's own resent copy),
   * when the hold was valid as the request was first sent:
   * - the earlier run left holds: its release marker says so, and the script answers what that run did (never -1);
   * - the reply came before the hold's deadline: nothing but an earlier run could have freed the lock while its lease
   *   ran (the watchdog is stopped for the release, so the deadline no longer moves): released;
   * - the reply came past the deadline: the first try may have been lost before Redis and the lease lapsed meanwhile
   *   (another owner may have taken the lock since): whether it was ever released by this owner cannot be told, and
   *   {@link LeaseLapsed} is thrown: `release()` rejects with `LockNotHeldError`.
   */
  async #send(request: ReleaseRequest, host: HoldHost): Promise<number> {
    const retry = request.sent;
    request.sent = true;
    const epoch = host.epoch?.();
    let reply: number;
    try {
      reply = await request.send(retry);
    } catch (error) {
      if (didNotRun(error)) request.sent = retry; // refused, not run: the next try is no retry of this one
      throw error;
    }
    if (reply >= 0 || request.heldWhenSent !== true || !(retry || host.epoch?.() !== epoch)) return reply;
    if (now() < this.#lease.deadline) return 0;
    throw new LeaseLapsed();
  }

  /** The tries failed: give the hold up (no renewal, signal aborted) and go on releasing in the background. */
  #giveUp(error: unknown): never {
    const ops = this.table.ops;
    // a lease without end (a permit that persists until released) is never free by itself: the latest date there is
    const ttl = this.#lease.ttlMs;
    const abandoned: Abandoned = { freeBy: new Date(ttl === Infinity ? 8.64e15 : Date.now() + ttl), landed: false };
    this.#abandoned = abandoned;
    this.#holds = 0;
    this.#lease.lose('release-failed', error); // aborts the signal, forgets the hold
    this.table[forget](this);
    const until = now() + this.#lease.ttlMs;
    void (async () => {
      for (let n = 1; now() < until && !abandoned.landed; n++) {
        await backoff(BACKGROUND_BACKOFF, n);
        if (abandoned.landed) return;
        try {
          await ops.releaseAll(this.owner);
          abandoned.landed = true;
        } catch {
          /* still unreachable: the lease runs out by itself */
        }
      }
    })();
    throw new ReleaseFailedError(ops.name, abandoned.freeBy, { cause: error });
  }

  /** `release()` called again after a release was given up: one more try, unless the background one landed. */
  async #retryAbandoned(abandoned: Abandoned): Promise<void> {
    if (abandoned.landed) return;
    const ops = this.table.ops;
    try {
      await ops.releaseAll(this.owner);
      abandoned.landed = true;
    } catch (error) {
      if (!(ops.isTransient ?? isConnectionError)(error)) throw error;
      throw new ReleaseFailedError(ops.name, abandoned.freeBy, { cause: error });
    }
  }

  /**
   * Sets the lease to `leaseMs` from now.
   * @throws {LockNotHeldError} when no longer held (or already released)
   */
  async extend(leaseMs: unknown, released: boolean): Promise<void> {
    const given = optDuration(leaseMs, 'leaseMs');
    if (given === undefined) throw new TypeError('leaseMs must be a number of milliseconds, got undefined');
    const lease = checkLease(given, 'leaseMs');
    const ops = this.table.ops;
    const name = ops.name;
    if (released) throw new LockNotHeldError(name, `${ops.kind} "${name}" was already released`);
    if (this.#lease.lost) throw new LockNotHeldError(name, `${ops.kind} "${name}" is no longer held (lost)`);
    const sentAt = now();
    if (!(await traceRenew(ops.kind, name, this, lease, 'extend', () => ops.renew(this.owner, lease)))) {
      this.#lease.lose('expired');
      throw new LockNotHeldError(name);
    }
    this.#lease.confirm(sentAt, lease, true);
  }
}

/** One release request of one held object: every try, and every later `release()` call, reuses it. */
export interface ReleaseRequest {
  readonly send: (retry: boolean) => Promise<number>;
  /** True once a try was sent (the next ones are retries). */
  sent: boolean;
  /** Whether the hold was still valid when the request was first sent. */
  heldWhenSent: boolean | undefined;
}

/**
 * The live holds of one primitive handle, by owner: the first acquisition of an owner creates its hold and lease,
 * re-entries share them.
 */
export class HoldTable {
  // Most handles ever see one owner: a field for it, a map only from the second on.
  #one: Hold | undefined;
  #many: Map<string, Hold> | undefined;

  constructor(
    readonly ops: HoldOps,
    readonly host: HoldHost,
  ) {}

  /**
   * Records an acquisition confirmed by Redis for a request sent at `sentAt` and returns its hold (hold count
   * raised). `watchdog`: renew every `watchdogInterval`; else the lease simply runs out. `firstLeaseMs`: Redis set a
   * shorter first lease than `leaseMs` (see `LeaseOptions.firstLeaseMs`).
   *
   * The grant rule, for every primitive (Redlock's validity rule is the same one, see `validityLeft`): a grant whose
   * reply comes when its lease, counted from `sentAt` less the drift, is already over is no grant. Another owner may
   * hold the lock by then; the holder would be told it holds a lock it cannot count on. Such a grant is undone (one
   * hold of `owner` released, which changes nothing when the lock is no longer ours) and {@link LateGrant} is thrown:
   * the wait loop reads it as a busy attempt (see `refusedWhileMigrating`), so the caller goes on waiting within its
   * timeout, and a single attempt finds nothing. A re-entry joins a hold of this owner still within its deadline;
   * one past it is lost at once, as its timer would tell a moment later.
   * @throws {LateGrant} when the grant came too late
   */
  held(owner: string, token: number, sentAt: number, leaseMs: number, watchdog: boolean, firstLeaseMs?: number): Hold {
    return this.heldEach([owner], token, sentAt, leaseMs, watchdog, firstLeaseMs)[0] as Hold;
  }

  /**
   * {@link HoldTable.held} for the owners of one grant (the permits one request took, each its own owner): one
   * check for all; a late grant undoes every one of them.
   * @throws {LateGrant} when the grant came too late
   */
  heldEach(owners: readonly string[], token: number, sentAt: number, leaseMs: number, watchdog: boolean, firstLeaseMs?: number): Hold[] {
    const at = now();
    if (at >= deadlineOf(sentAt, firstLeaseMs ?? leaseMs)) {
      // a live hold of the same owner keeps the re-entry valid; only a grant with nothing valid behind it is undone
      const joined = owners.length === 1 ? this.get(owners[0] as string) : undefined;
      if (!joined || joined.ended(at)) {
        const ops = this.ops;
        const undone = Promise.all(owners.map((o) => releaseRequest(ops, o, 1)(false).catch(() => 0))).then(() => {});
        throw new LateGrant(this.ops.name, at - sentAt, undone, firstLeaseMs ?? leaseMs);
      }
    }
    return owners.map((owner) => this.#record(owner, token, sentAt, leaseMs, watchdog, firstLeaseMs));
  }

  /** Records a grant already checked: a new hold, or one more acquisition of a live one. */
  #record(owner: string, token: number, sentAt: number, leaseMs: number, watchdog: boolean, firstLeaseMs?: number): Hold {
    const live = this.get(owner);
    if (live?.join(sentAt, leaseMs)) return live;
    const created = new Hold(this, owner, token, sentAt, leaseMs, watchdog, firstLeaseMs);
    this.#set(created);
    this.host.holds.add(created);
    return created;
  }

  /**
   * Adopts the hold `owner` has in Redis (taken by another process, or by a client that is gone): sets its lease to
   * `leaseMs` from now (so renewal is taken over here: the watchdog, or a fixed lease), then reads its hold count and
   * token. The hold count in Redis is not raised; one `release()` of what this returns gives up one hold count, as
   * any acquisition's does. Returns the hold (local count raised) and the count in Redis, or `null` when `owner`
   * holds nothing.
   */
  async adopt(owner: string, leaseMs: number, watchdog: boolean): Promise<{ hold: Hold; holdCount: number } | null> {
    const ops = this.ops;
    if (!ops.inspectOwner) throw new TypeError(`a ${ops.kind} cannot be adopted`);
    // The grant rule (see `held`): a renewal whose reply came past its lease sets nothing that can be counted on, so
    // it is sent again (an adoption raises no hold count: nothing to undo); a few late replies in a row are an error.
    for (let tries = 1; ; tries++) {
      const sentAt = now();
      if (!(await ops.renew(owner, leaseMs))) return null;
      const info = await ops.inspectOwner(owner); // called on ops: a primitive may supply it as a method
      if (!info) return null; // released between the two calls
      if (validityLeft(sentAt, leaseMs) > 0) return { hold: this.#record(owner, info.token, sentAt, leaseMs, watchdog), holdCount: info.holdCount };
      if (tries >= 3) throw new RedisConnectionError(`the adoption of ${ops.kind} "${ops.name}" was confirmed too late ${tries} times: Redis answers slower than the lease`);
    }
  }

  /** The live hold of `owner` here, if any. */
  get(owner: string): Hold | undefined {
    return this.#one?.owner === owner ? this.#one : this.#many?.get(owner);
  }

  #set(hold: Hold): void {
    if (this.#one === undefined || this.#one.owner === hold.owner) {
      this.#one = hold;
      return;
    }
    (this.#many ??= new Map()).set(hold.owner, hold);
  }

  /** The claim of a hand-off still on its way for `owner`'s hold here, if any (a re-entry waits for it). */
  claimOf(owner: string): Promise<void> | undefined {
    return this.get(owner)?.claim;
  }

  /** `owner` was released here by other means (a permit by id): see {@link Hold.settle}. */
  settle(owner: string): void {
    this.get(owner)?.settle();
  }

  /** Drops a hold that was released or lost: called by the hold itself (see {@link forget}). */
  [forget](hold: Hold): void {
    if (this.#one === hold) this.#one = undefined;
    else if (this.#many?.get(hold.owner) === hold) this.#many.delete(hold.owner);
    this.host.holds.delete(hold);
  }
}

/**
 * The base of every held object backed by a hold of the engine: name, owner, token, loss signal, `extend`, and the release
 * rule of the engine.
 */
export class LeasedHeld extends Held {
  #request: ReleaseRequest | undefined;

  /** @internal */
  constructor(
    /** @internal */
    readonly hold: Hold,
    /** The owner's hold count in Redis right after this acquisition (1 = first hold). */
    readonly holdCount: number,
  ) {
    super();
  }

  /** The name of what is held. */
  get name(): string {
    return this.hold.table.ops.name;
  }
  /** The owner id this is held under (keep it secret: whoever knows it can release it). */
  get owner(): string {
    return this.hold.owner;
  }
  /** Aborts, with a `LockLostError` as its reason, the moment the hold can no longer be counted on. */
  get signal(): AbortSignal {
    return this.hold.signal;
  }
  /** True once the hold was lost (not when released). */
  get lost(): boolean {
    return this.hold.lost;
  }

  /**
   * Sets the lease to `leaseMs` from now (for a fixed lease; watchdog holds renew themselves).
   * @throws {LockNotHeldError} when no longer held
   */
  extend(leaseMs: number): Promise<void> {
    return this.hold.extend(leaseMs, this.released);
  }

  /** True while the watchdog renews the lease (false for a fixed lease, after {@link LeasedHeld.stopRefresh}, once released or lost). */
  get refreshing(): boolean {
    return this.hold.renewing;
  }

  /**
   * Stops the watchdog and keeps the hold on a fixed lease from now on (redis-semaphore's `stopRefresh`): it runs out
   * one lease after the last renewal unless released or extended with {@link LeasedHeld.extend}; the `signal` then
   * aborts with reason `expired`. The watchdog is per hold, so this stops it for every re-entry of this owner in this
   * process. No Redis call; a no-op on a fixed lease, a released or a lost hold.
   */
  stopRefresh(): void {
    this.hold.stopRefresh();
  }

  /** @internal */
  override diagnostics(): HeldFacts {
    const ops = this.hold.table.ops;
    return { kind: kindOf(ops.kind), name: ops.name, fingerprint: this.hold.fingerprint, token: this.hold.token, holdCount: this.holdCount };
  }

  protected releaseOnce(): Promise<void> {
    this.#request ??= this.hold.request();
    return this.hold.release(this.#request);
  }
}

