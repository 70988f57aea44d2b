/**
 * Leader election: one leader per name at a time, with a term that only grows (a fencing token), a loss signal that
 * fires before another candidate can lead, a hand-over within a round trip on `resign()`, and observers.
 *
 * On Redis the leader is one hash per election name, `{term, owner, label, since}`, whose TTL is the leader's lease.
 * Leadership is a hold of the same engine as the lock's (internal/hold.ts): the watchdog renews the lease, and the
 * signal aborts at the local deadline, which falls before Redis can expire the key. The term is minted from the
 * fencing counter of the name's slot (src/keys.ts), so it is also a fencing token for `fencedKey` or the SQL helpers.
 * Candidates wait on the election's channel (pub/sub, no polling); a resignation publishes there and wakes one
 * candidate per process; an expiry publishes nothing, so a waiting candidate also looks again when the leader's
 * lease runs out.
 *
 * @module
 */
import { hostname } from 'node:os';
import type { Closable, Core } from '../core.js';
import { CAMPAIGN_BACKOFF, OBSERVE_BACKOFF, pauseAfter } from '../internal/backoff.js';
import { liveSlot, type LiveSet } from '../internal/live-set.js';
import { fingerprint, type AcquireContext, type PrimitiveKind } from '../diagnostics.js';
import { AcquireTimeoutError, ClientClosedError, isHoldfastError, LockNotHeldError, ReplicationNotReachedError, type LockLostError } from '../errors.js';
import { waitReplicas, type ReplicaSync } from '../internal/replica-sync.js';
import { now } from '../internal/clock.js';
import { HoldTable, LeasedHeld, type Hold, type HoldHost, type HoldOps } from '../internal/hold.js';
import { publishElection, traceAcquire } from '../internal/trace.js';
import { checkDuration, checkKnownKeys, checkOptions, optDuration, optFunction, optSignal } from '../internal/validate.js';
import { waitFor, type Attempt } from '../internal/wait.js';
import { scripts } from '../lua/scripts.gen.js';
import { mayHaveRun, type ReplyOf } from '../script.js';

/** Options of `holdfast.election(name, options)`. */
export interface ElectionOptions {
  /**
   * What this candidate is called when it leads: shown by `leader()`, observers, the diagnostics channels and
   * `holdfast inspect`. Not secret, not unique: a host and process id is typical. At most 256 characters.
   * @default `${hostname()}:${process.pid}`
   */
  label?: string;
}

const ELECTION_KEYS = ['label'] as const;

/** Options of `campaign()`. */
export interface CampaignOptions {
  /**
   * The leader's lease in ms: a leader that stops renewing (crash, pause, lost network) is replaced within it. The
   * watchdog renews it every third of it. At least 100 ms.
   * @default the client's `watchdogLease` (30000)
   */
  lease?: number;
  /**
   * How long to wait to lead, in ms. `0` makes a single attempt.
   * @default no limit
   */
  timeout?: number;
  /** Aborts the wait: the promise rejects with `signal.reason`. */
  signal?: AbortSignal;
}

const CAMPAIGN_KEYS = ['lease', 'timeout', 'signal'] as const;

/** Options of `run()`. */
export interface RunOptions {
  /** Stops the loop: leadership in progress is resigned (its `signal` aborts) and `run()` resolves. */
  signal?: AbortSignal;
  /**
   * The lease of every leadership, as in {@link CampaignOptions.lease}.
   * @default the client's `watchdogLease`
   */
  lease?: number;
}

const RUN_KEYS = ['signal', 'lease'] as const;

/** Options of `observe()`. */
export interface ObserveOptions {
  /** Ends the iteration (the loop simply ends; nothing is thrown). */
  signal?: AbortSignal;
}

const OBSERVE_KEYS = ['signal'] as const;

/** Who leads an election now. */
export interface LeaderInfo {
  /** The leader's term: strictly greater than every earlier term of this election. */
  term: number;
  /** The leader's label (see {@link ElectionOptions.label}). */
  label: string;
  /** The fingerprint of the leader's owner id (a hash: the owner id itself is a capability and never shown). */
  fingerprint: string;
  /** When this term began, in ms since the epoch (the server's clock). */
  since: number;
  /** ms left of the leader's lease as the server sees it (`null` where the store has no lease, on ZooKeeper). */
  remainingMs: number | null;
}

/** One observed change of an election's leader. */
export interface ElectionChange {
  /** The leader now, or `null` while nobody leads. */
  leader: LeaderInfo | null;
  /** The leader's term, or while nobody leads the last term seen (the one that ended; 0 when none was seen). */
  term: number;
}

/** A candidate that waits to lead (see `inspect()`). */
export interface CandidateInfo {
  /** The candidate's label (see {@link ElectionOptions.label}). */
  label: string;
  /** The fingerprint of the candidate's owner id. */
  fingerprint: string;
}

/** A point-in-time view of an election (for operators and tools). */
export interface ElectionInfo {
  /** The election's name. */
  name: string;
  /** Who leads, or `null`. */
  leader: LeaderInfo | null;
  /** The candidates waiting to lead (those that wait with a timeout other than 0), the leader not included. */
  candidates: CandidateInfo[];
  /** The last term minted from this name's counter (shared with the other names of its Cluster slot): at least every term so far. */
  lastTerm: number;
}

/** What `run()` hands its function while this candidate leads. */
export interface LeaderScope {
  /** The term: send it as the fencing token with every write the leader makes. */
  term: number;
  /** Aborts when leadership ends: lost (a `LockLostError`), resigned, or `run()`'s own signal aborted. */
  signal: AbortSignal;
  /** The leadership itself (health: `leaseRemainingMs`, `renewing`). */
  leadership: Leadership;
}

/**
 * The shape every leadership shares (Redis and ZooKeeper): the term, the loss signal, `resign()`, and health.
 */
/** @internal */
export interface LeadershipLike {
  readonly name: string;
  readonly term: number;
  readonly label: string;
  readonly signal: AbortSignal;
  readonly leading: boolean;
  resign(): Promise<void>;
}

/**
 * Leading an election: one term. `signal` aborts when leadership is lost (before another candidate can lead, while
 * the timing assumptions hold); `resign()` steps down and wakes the next candidate at once.
 */
export class Leadership extends LeasedHeld {
  /** @internal */
  constructor(
    hold: Hold,
    /** This candidate's label. */
    readonly label: string,
    /** When this term began, in ms since the epoch (the server's clock). */
    readonly since: number,
  ) {
    super(hold, 1);
  }

  /** The term: strictly greater than every earlier term of this election. Use it as a fencing token. */
  get term(): number {
    return this.hold.token;
  }

  /** True while this candidate leads: not resigned, not lost. */
  get leading(): boolean {
    return !this.released && this.hold.active;
  }

  /**
   * ms until the lease is at risk: until the local deadline, which falls before the server can expire the lease
   * (0 once lost or resigned). A healthy leader keeps it above two thirds of the lease; it sinks when renewals fail.
   */
  get leaseRemainingMs(): number {
    if (!this.leading) return 0;
    return Math.max(0, Math.floor(this.hold.deadline - now()));
  }

  /** The lease in ms. */
  get leaseMs(): number {
    return this.hold.leaseMs;
  }

  /**
   * Steps down: deletes the leadership in the store and wakes the waiting candidates, so the next one leads within a
   * round trip. Idempotent; resolves also when leadership was lost before. `release()` and `await using` do the same.
   * @throws {ReleaseFailedError} when Redis could not be reached (the lease then runs out by itself; call again to retry)
   */
  async resign(): Promise<void> {
    try {
      await this.release();
    } catch (error) {
      if (!(error instanceof LockNotHeldError)) throw error;
    }
  }

  protected override async releaseOnce(): Promise<void> {
    await super.releaseOnce();
    publishElection('election', this.name, 'resigned', this.term, this.label, this.hold.fingerprint);
  }

  /** @internal */
  override diagnostics(): { kind: PrimitiveKind; name: string; fingerprint: string; token: number; holdCount: number } {
    return { kind: 'election', name: this.name, fingerprint: this.hold.fingerprint, token: this.term, holdCount: 1 };
  }
}

/** @internal Checks a label. */
export function checkLabel(value: unknown): string {
  if (value === undefined) return `${hostname()}:${process.pid}`;
  if (typeof value !== 'string') throw new TypeError(`options.label must be a string, got ${value === null ? 'null' : typeof value}`);
  if (value.length > 256) throw new RangeError(`options.label must be at most 256 characters, got ${value.length}`);
  if (!value.isWellFormed()) throw new RangeError('options.label must be well-formed Unicode');
  return value;
}

/** @internal The checked options of `holdfast.election(name, options)`. */
export function electionParams(options: unknown): { label: string } {
  const opts = checkOptions<ElectionOptions>(options);
  checkKnownKeys(opts, ELECTION_KEYS);
  return { label: checkLabel(opts.label) };
}

/** @internal The checked options of `campaign()`. */
export function campaignParams(
  options: unknown,
  defaultLease: number,
): { lease: number; timeout: number | undefined; signal: AbortSignal | undefined } {
  const opts = checkOptions<CampaignOptions>(options);
  checkKnownKeys(opts, CAMPAIGN_KEYS);
  return {
    lease: opts.lease === undefined ? defaultLease : checkDuration(opts.lease, 'options.lease', 100),
    timeout: optDuration(opts.timeout, 'options.timeout', 0),
    signal: optSignal(opts.signal, 'options.signal'),
  };
}

/** @internal The checked arguments of `run()`. */
export function runParams<F>(fn: unknown, options: unknown): { fn: F; signal: AbortSignal | undefined; lease: number | undefined } {
  const f = optFunction<F>(fn, 'fn');
  if (f === undefined) throw new TypeError('fn must be a function, got undefined');
  const opts = checkOptions<RunOptions>(options);
  checkKnownKeys(opts, RUN_KEYS);
  return { fn: f, signal: optSignal(opts.signal, 'options.signal'), lease: opts.lease === undefined ? undefined : checkDuration(opts.lease, 'options.lease', 100) };
}

/** @internal The checked options of `observe()`. */
export function observeParams(options: unknown): { signal: AbortSignal | undefined } {
  const opts = checkOptions<ObserveOptions>(options);
  checkKnownKeys(opts, OBSERVE_KEYS);
  return { signal: optSignal(opts.signal, 'options.signal') };
}

/** A connection problem a campaign may simply be retried after (the store was unreachable for a moment). */
function transient(error: unknown): boolean {
  return isHoldfastError(error) && (error.code === 'REDIS_CONNECTION' || error.code === 'ZOOKEEPER_CONNECTION');
}

/** Sleeps `ms` (an unref'd timer), cut short when `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    timer.unref();
    signal?.addEventListener('abort', done, { once: true });
  });
}

/**
 * @internal The leader loop shared by every store: campaign, run `fn` while leading, campaign again after a loss,
 * until `signal` aborts (resolves) or the client closes (resolves). `fn` returning while still leading resigns and
 * resolves with its value; `fn` throwing while still leading resigns and rejects with its error. A campaign that
 * cannot reach the store is tried again after a pause (100 ms, doubling up to 2 s): a leader service outlives a blip.
 */
export async function leaderLoop<L extends LeadershipLike, T>(
  campaign: (signal: AbortSignal | undefined) => Promise<L>,
  fn: (leadership: L, signal: AbortSignal) => Promise<T> | T,
  signal: AbortSignal | undefined,
  closed: () => boolean,
): Promise<T | undefined> {
  // campaigns in a row that could not reach the store (their pauses: CAMPAIGN_BACKOFF)
  for (let failures = 0; ; ) {
    if (signal?.aborted || closed()) return undefined;
    let leadership: L;
    try {
      leadership = await campaign(signal);
      failures = 0;
    } catch (error) {
      if ((signal?.aborted && error === signal.reason) || error instanceof ClientClosedError || closed()) return undefined;
      if (!transient(error)) throw error;
      await pause(pauseAfter(CAMPAIGN_BACKOFF, ++failures), signal);
      continue;
    }
    const scoped = signal ? AbortSignal.any([leadership.signal, signal]) : leadership.signal;
    let result: T;
    try {
      result = await fn(leadership, scoped);
    } catch (error) {
      if (leadership.leading && !signal?.aborted) {
        await leadership.resign().catch(() => {});
        throw error;
      }
      await leadership.resign().catch(() => {});
      continue; // lost while running (or stopped: the loop's first check ends it): campaign again
    }
    const lost = !leadership.leading;
    await leadership.resign().catch(() => {});
    if (signal?.aborted) return undefined;
    if (!lost) return result;
  }
}

/**
 * @internal Observation shared by every store: yields the leader now, then every change, in term order (a term below
 * the last one yielded is never yielded: a stale read), coalesced (a slow consumer gets the latest). `read` gets the
 * leader; `subscribe(onChange)` registers for change notices and resolves to its undo; `recheckMs(leader)` is the
 * longest sleep without a notice (an expiry publishes nothing on Redis); `holds`: the client's live set, which its
 * `close()` empties (the observation ends then).
 */
export async function* observeLeader(
  read: () => Promise<LeaderInfo | null>,
  subscribe: (onChange: () => void) => Promise<() => void>,
  recheckMs: (leader: LeaderInfo | null) => number,
  signal: AbortSignal | undefined,
  closed: () => boolean,
  holds: LiveSet<Closable>,
): AsyncGenerator<ElectionChange, void, undefined> {
  // set by a change notice: look again before sleeping
  const notice = { dirty: false };
  let wake: (() => void) | undefined;
  const unsubscribe = await subscribe(() => {
    notice.dirty = true;
    wake?.();
  });
  // the client's close() ends the observation at once (it wakes the sleep; the loop then sees the client closed)
  const closing: Closable = {
    [liveSlot]: undefined,
    closeHold: () => {
      wake?.();
      return Promise.resolve();
    },
  };
  holds.add(closing);
  const sleep = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, ms));
      timer.unref();
      wake = done;
      signal?.addEventListener('abort', done, { once: true });
    });
  let lastTerm = 0;
  let lastLeading = false;
  let first = true;
  let failures = 0;
  try {
    for (;;) {
      if (signal?.aborted || closed()) return;
      notice.dirty = false;
      let leader: LeaderInfo | null;
      try {
        leader = await read();
        failures = 0;
      } catch (error) {
        if (closed() || error instanceof ClientClosedError) return;
        // unreachable for now: look again shortly (observers never give up while the client is open)
        await sleep(pauseAfter(OBSERVE_BACKOFF, ++failures));
        notice.dirty = true;
        continue;
      }
      if (signal?.aborted) return;
      // the first look is always told; after it, a higher term, or the leader gone (a lower term is a stale read)
      const changed = first || (leader ? leader.term > lastTerm : lastLeading);
      if (changed) {
        first = false;
        if (leader) lastTerm = Math.max(lastTerm, leader.term);
        lastLeading = leader !== null;
        yield { leader, term: leader ? leader.term : lastTerm };
        if (notice.dirty) continue;
      }
      if (!notice.dirty) await sleep(recheckMs(leader));
    }
  } finally {
    holds.delete(closing);
    unsubscribe();
  }
}

/** The per-lease host of the hold engine: the client's, with the watchdog renewing every third of the lease. */
function hostFor(core: Core, leaseMs: number): HoldHost {
  const interval = leaseMs === core.settings.watchdogLease ? core.settings.watchdogInterval : Math.max(10, Math.floor(leaseMs / 3));
  return {
    holds: core.holds,
    emitLost: (error) => core.emitLost(error),
    watchdogInterval: interval,
    epoch: () => core.epoch(),
  };
}

/** The election's scripts, as the hold engine calls them. */
class ElectionOps implements HoldOps {
  readonly kind = 'election';
  readonly key: string;
  readonly candidates: string;
  readonly channel: string;

  constructor(
    readonly core: Core,
    readonly name: string,
  ) {
    const k = core.keys;
    this.key = k.election(name);
    this.candidates = k.electionCandidates(name);
    this.channel = k.electionChannel(name);
  }

  async renew(owner: string, leaseMs: number): Promise<boolean> {
    return (await this.core.run(scripts['election/renew'], [this.key], [owner, leaseMs])) === 1;
  }

  release(owner: string): Promise<number> {
    return this.core.run(scripts['election/resign'], [this.key], [owner, this.channel]);
  }

  releaseAll(owner: string): Promise<unknown> {
    return this.core.run(scripts['election/resign'], [this.key], [owner, this.channel]);
  }
}

/** Decodes a leader reply `{term, owner, label, since, pttl}` (`null`: nobody leads), of `election/leader` or `election/inspect`. */
function decodeLeader(reply: ReplyOf<(typeof scripts)['election/leader']>): LeaderInfo | null {
  if (!Array.isArray(reply)) return null;
  const [term, owner, label, since, pttl] = reply;
  return { term: Number(term), label: String(label), fingerprint: fingerprint(String(owner)), since: Number(since), remainingMs: Number(pttl) };
}

/**
 * A leader election on Redis, from `holdfast.election(name, { label })`. A cheap handle: each `campaign()` is a
 * candidate of its own, with its own owner id.
 *
 * @example
 * ```ts
 * const election = holdfast.election('ingest', { label: `${hostname()}:${process.pid}` });
 * await election.run(async ({ term, signal }) => {
 *   await consume({ fence: term, signal }); // leader-only work, until leadership ends
 * }, { signal: shutdown.signal });
 * ```
 */
export class Election {
  /** What the diagnostics channels and the tools call this primitive. */
  readonly kind = 'election' as const;
  /** This candidate's label. */
  readonly label: string;
  readonly #ops: ElectionOps;
  readonly #tables = new Map<number, HoldTable>();

  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The election's name. */
    readonly name: string,
    options?: ElectionOptions,
  ) {
    this.label = electionParams(options).label;
    this.#ops = new ElectionOps(core, name);
  }

  /**
   * Waits until this caller leads, and returns its leadership (a new term). With the client's `replicaSync`, the
   * election is confirmed by replicas first (else resigned, and `ReplicationNotReachedError` thrown).
   * @throws {AcquireTimeoutError} when `timeout` passes first (the last attempt is made at the deadline)
   * @throws {RedisConnectionError} when Redis does not answer within `commandTimeout`
   * @throws the signal's reason when `signal` aborts
   */
  campaign(options?: CampaignOptions): Promise<Leadership> {
    return traceAcquire('election', this.name, options, (trace) => this.#campaign(options, trace));
  }

  async #campaign(options: CampaignOptions | undefined, trace: AcquireContext | undefined): Promise<Leadership> {
    const core = this.core;
    const { lease, timeout, signal } = campaignParams(options, core.settings.watchdogLease);
    core.assertOpen();
    const ready = core.ready();
    if (ready) await ready;
    const ops = this.#ops;
    const owner = core.newOwner();
    const label = this.label;
    const fp = fingerprint(owner);
    publishElection('election', this.name, 'campaign', 0, label, fp);
    let table = this.#tables.get(lease);
    if (!table) this.#tables.set(lease, (table = new HoldTable(ops, hostFor(core, lease))));
    const held = table;
    const waits = timeout !== 0 ? '1' : '0';
    const attempt = (budget: number): Promise<Attempt<Leadership>> => {
      const sentAt = now();
      return core.run(scripts['election/campaign'], [ops.key, core.keys.fence(this.name), ops.candidates], [owner, lease, label, waits, ops.channel], budget).then(
        (reply): Attempt<Leadership> => {
          if (reply[0] !== 1) return { done: false, retryInMs: reply[1] === -2 ? 0 : reply[1] };
          const [, term, since] = reply;
          const leadership = new Leadership(held.held(owner, term, sentAt, lease, true), label, since);
          this.#watch(leadership);
          return { done: true, value: leadership };
        },
        (error: unknown) => {
          // the reply was lost: this owner may lead in Redis; step down (the lease bounds it anyway)
          if (mayHaveRun(error)) ops.releaseAll(owner).catch(() => {});
          throw error;
        },
      );
    };
    const leadership = await waitFor(core, {
      name: this.name,
      channel: ops.channel,
      timeout,
      signal,
      attempt,
      trace,
      onGiveUp: async () => {
        if (timeout !== 0) await core.run(scripts['election/withdraw'], [ops.candidates], [`${owner}|${label}`]);
      },
    });
    if (!leadership) throw new AcquireTimeoutError(this.name, timeout ?? 0);
    const sync = core.settings.replicaSync;
    if (sync) await this.#syncReplicas(leadership, sync);
    return leadership;
  }

  /** The client's `replicaSync`: WAIT for replicas; when not reached (or WAIT fails), resign and throw. */
  async #syncReplicas(leadership: Leadership, sync: ReplicaSync): Promise<void> {
    let reached: number;
    try {
      reached = await waitReplicas(this.core, this.#ops.key, sync);
    } catch (error) {
      await leadership.resign().catch(() => {});
      throw error;
    }
    if (reached < sync.replicas) {
      await leadership.resign().catch(() => {
        /* the lease bounds a leadership we could not resign */
      });
      throw new ReplicationNotReachedError(this.name, sync.replicas, reached);
    }
  }

  /** Publishes `elected` now, and `lost` when leadership is lost. */
  #watch(leadership: Leadership): void {
    const name = this.name;
    const fp = leadership.hold.fingerprint;
    publishElection('election', name, 'elected', leadership.term, leadership.label, fp);
    leadership.signal.addEventListener(
      'abort',
      () => publishElection('election', name, 'lost', leadership.term, leadership.label, fp, (leadership.signal.reason as LockLostError).reason),
      { once: true },
    );
  }

  /**
   * Leads in a loop: campaigns, runs `fn` while leading (it gets the term and a signal that aborts when leadership
   * ends), and campaigns again after a loss, until `options.signal` aborts or the client closes (then resolves,
   * having resigned). When `fn` returns while still leading, this resigns and resolves with its value; when it throws
   * while still leading, this resigns and rejects with its error. Whatever `fn` does once its signal aborted for a
   * loss is ignored, and the loop campaigns again. A campaign that cannot reach Redis is tried again after a pause
   * (100 ms, doubling up to 2 s); other errors reject.
   */
  run<T>(fn: (scope: LeaderScope) => Promise<T> | T, options?: RunOptions): Promise<T | undefined> {
    const p = runParams<(scope: LeaderScope) => Promise<T> | T>(fn, options);
    this.core.assertOpen();
    return leaderLoop<Leadership, T>(
      (signal) => this.campaign({ ...(signal === undefined ? {} : { signal }), ...(p.lease === undefined ? {} : { lease: p.lease }) }),
      (leadership, signal) => p.fn({ term: leadership.term, signal, leadership }),
      p.signal,
      () => this.core.closed,
    );
  }

  /** Who leads now, or `null`. One round trip. */
  async leader(): Promise<LeaderInfo | null> {
    this.core.assertOpen();
    return decodeLeader(await this.core.run(scripts['election/leader'], [this.#ops.key], []));
  }

  /** The leader, the waiting candidates and the last term, in one step (for operators and tools). */
  async inspect(): Promise<ElectionInfo> {
    this.core.assertOpen();
    const ops = this.#ops;
    const [leader, members, lastTerm] = await this.core.run(scripts['election/inspect'], [ops.key, ops.candidates, this.core.keys.fence(this.name)], []);
    const candidates = (members ?? []).map((member) => {
      const bar = member.indexOf('|');
      return { label: member.slice(bar + 1), fingerprint: fingerprint(member.slice(0, bar)) };
    });
    return { name: this.name, leader: decodeLeader(leader), candidates, lastTerm: Number(lastTerm) };
  }

  /**
   * Deletes the leadership whoever holds it and wakes the candidates. The deposed leader's signal aborts at its next
   * renewal (within a third of its lease), not at once: for operators, prefer `resign()` or letting the lease run out.
   * @returns true if a leader was deposed
   */
  async forceResign(): Promise<boolean> {
    this.core.assertOpen();
    const ops = this.#ops;
    return (await this.core.run(scripts['election/force-resign'], [ops.key, ops.candidates], [ops.channel])) === 1;
  }

  /**
   * Observes the leader: yields the leader now, then each change (elected, resigned, expired), in term order: a term
   * is never followed by a lower one. A slow consumer gets the latest state, not every step. An observer is not a
   * candidate. Elections and resignations are heard over pub/sub; an expiry publishes nothing, so the observer also
   * looks again when the leader's lease runs out. Ends when `signal` aborts or the client closes.
   */
  observe(options?: ObserveOptions): AsyncGenerator<ElectionChange, void, undefined> {
    const { signal } = observeParams(options);
    this.core.assertOpen();
    const core = this.core;
    return observeLeader(
      () => this.leader(),
      (onChange) => core.notifier.observe(this.#ops.channel, onChange),
      // the leader's lease (expiry publishes nothing); with nobody leading, a new leader publishes: look anyway now and then
      (leader) => (leader && leader.remainingMs !== null && leader.remainingMs >= 0 ? leader.remainingMs + 1 : core.settings.watchdogLease),
      signal,
      () => core.closed,
      core.holds,
    );
  }
}
