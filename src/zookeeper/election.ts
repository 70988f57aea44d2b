/**
 * Leader election over ZooKeeper: Curator's `LeaderLatch` recipe. Each candidate creates `_c_<guid>-election-<seq>`
 * (ephemeral, sequential) under `<root>/election/<name>`, holding its fingerprint and label; the lowest sequence
 * leads; every other candidate watches only the node just before its own. The term is the leader node's czxid:
 * zxids are one total order over the ensemble and every later leader's node was created after the leader before it,
 * so terms only grow per election, and serve as fencing tokens (`fencedWrite`). A crashed leader is replaced when
 * its session expires (the session timeout is the lease); `resign()` deletes the node and the next candidate's watch
 * fires at once.
 *
 * @module
 */
import type { Stat } from 'node-zookeeper-client';
import { fingerprint } from '../diagnostics.js';
import { AcquireTimeoutError, LockNotHeldError, type LockLostError } from '../errors.js';
import { publishElection, traceAcquire } from '../internal/trace.js';
import { checkKnownKeys, checkOptions, optDuration, optSignal } from '../internal/validate.js';
import {
  electionParams,
  leaderLoop,
  observeLeader,
  observeParams,
  runParams,
  type CandidateInfo,
  type ElectionChange,
  type ElectionInfo,
  type ElectionOptions,
  type LeaderInfo,
  type ObserveOptions,
} from '../primitives/election.js';
import { ZkHeldLock, ZkHold } from './hold.js';
import { deleteHolders } from './lock.js';
import { enqueue, readQueue, sortQueue, wrap, type ZkCore } from './queue.js';
import { ZK, czxidOf, zkCode } from './session.js';

/** Options of the ZooKeeper `campaign()`: the session timeout is the lease. */
export interface ZkCampaignOptions {
  /**
   * How long to wait to lead, in ms. `0` makes a single attempt.
   * @default no limit
   */
  timeout?: number;
  /** Aborts the wait: the promise rejects with `signal.reason` (the candidate's node is deleted). */
  signal?: AbortSignal;
}

const CAMPAIGN_KEYS = ['timeout', 'signal'] as const;

/** Options of the ZooKeeper `run()`. */
export interface ZkRunOptions {
  /** Stops the loop: leadership in progress is resigned and `run()` resolves. */
  signal?: AbortSignal;
}

/** What the ZooKeeper `run()` hands its function while this candidate leads. */
export interface ZkLeaderScope {
  /** The term (the leader node's czxid): send it as the fencing token with every write the leader makes. */
  term: number;
  /** Aborts when leadership ends: lost, resigned, or `run()`'s own signal aborted. */
  signal: AbortSignal;
  /** The leadership itself. */
  leadership: ZkLeadership;
}

/** A candidate node's data: its owner's fingerprint and its label. */
function encodeData(owner: string, label: string): Buffer {
  return Buffer.from(JSON.stringify({ f: fingerprint(owner), l: label }));
}

function decodeData(data: Buffer | undefined): { fingerprint: string; label: string } {
  try {
    const parsed = JSON.parse(String(data ?? '')) as { f?: unknown; l?: unknown };
    return { fingerprint: typeof parsed.f === 'string' ? parsed.f : '', label: typeof parsed.l === 'string' ? parsed.l : '' };
  } catch {
    return { fingerprint: String(data ?? ''), label: '' };
  }
}

/**
 * Leading a ZooKeeper election: one term. `signal` aborts when leadership is lost (the session expired or went
 * unconfirmed for the session timeout, or the node was deleted); `suspendedSignal` as soon as it is uncertain.
 */
export class ZkLeadership extends ZkHeldLock {
  /** @internal */
  constructor(
    hold: ZkHold,
    /** This candidate's label. */
    readonly label: string,
  ) {
    super(hold);
  }

  /** The term: the leader node's czxid, greater than every earlier term of this election. Use it as a fencing token. */
  get term(): number {
    return this.token;
  }

  /** True while this candidate leads: not resigned, not lost. */
  get leading(): boolean {
    return !this.released && this.hold.active;
  }

  /**
   * Steps down: deletes the node, so the next candidate leads as soon as its watch fires. Idempotent; resolves also
   * when leadership was lost before.
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
    publishElection('zk-election', this.name, 'resigned', this.term, this.label, this.hold.fingerprint);
  }
}

/**
 * A leader election on ZooKeeper, from `zk.election(name, { label })`: the interface of the Redis `Election`.
 */
export class ZkElection {
  /** What the diagnostics channels and the tools call this primitive. */
  readonly kind = 'zk-election' as const;
  /** This candidate's label. */
  readonly label: string;
  readonly #dir: string;

  /** @internal */
  constructor(
    /** @internal */
    readonly core: ZkCore,
    /** The election's name. */
    readonly name: string,
    options?: ElectionOptions,
  ) {
    this.label = electionParams(options).label;
    this.#dir = core.dir('election', name);
  }

  /**
   * Waits until this caller leads, and returns its leadership.
   * @throws {AcquireTimeoutError} when `timeout` passes first
   * @throws {ZooKeeperConnectionError} when ZooKeeper cannot be reached, or the session is lost while waiting
   * @throws the signal's reason when `signal` aborts
   */
  campaign(options?: ZkCampaignOptions): Promise<ZkLeadership> {
    return traceAcquire('zk-election', this.name, options, async (trace) => {
      const opts = checkOptions<ZkCampaignOptions>(options);
      checkKnownKeys(opts, CAMPAIGN_KEYS);
      const timeout = optDuration(opts.timeout, 'options.timeout', 0);
      const signal = optSignal(opts.signal, 'options.signal');
      const core = this.core;
      core.assertOpen();
      const owner = core.newOwner();
      const label = this.label;
      publishElection('zk-election', this.name, 'campaign', 0, label, fingerprint(owner));
      const entry = await enqueue(core, {
        dir: this.#dir,
        kind: 'election',
        timeout,
        signal,
        data: encodeData(owner, label),
        trace,
        verdict: (sorted, index) => (index === 0 ? { granted: true } : { granted: false, watch: sorted[index - 1]! }),
      });
      if (!entry) throw new AcquireTimeoutError(this.name, timeout ?? 0);
      const hold = new ZkHold(core, this.name, 'zk-election', owner, entry, (h) => core.holds.delete(h));
      core.holds.add(hold);
      const leadership = new ZkLeadership(hold, label);
      const name = this.name;
      publishElection('zk-election', name, 'elected', leadership.term, label, hold.fingerprint);
      hold.signal.addEventListener(
        'abort',
        () => publishElection('zk-election', name, 'lost', leadership.term, label, hold.fingerprint, (hold.signal.reason as LockLostError).reason),
        { once: true },
      );
      return leadership;
    });
  }

  /**
   * Leads in a loop, as the Redis `Election.run`: campaigns, runs `fn` while leading, campaigns again after a loss,
   * until `options.signal` aborts or the client closes (then resolves, having resigned). `fn` returning while still
   * leading resigns and resolves with its value; throwing while still leading resigns and rejects.
   */
  run<T>(fn: (scope: ZkLeaderScope) => Promise<T> | T, options?: ZkRunOptions): Promise<T | undefined> {
    const p = runParams<(scope: ZkLeaderScope) => Promise<T> | T>(fn, options);
    if (p.lease !== undefined) throw new TypeError('options.lease is not an option on ZooKeeper: the session timeout is the lease');
    this.core.assertOpen();
    return leaderLoop<ZkLeadership, T>(
      (signal) => this.campaign(signal === undefined ? {} : { signal }),
      (leadership, signal) => p.fn({ term: leadership.term, signal, leadership }),
      p.signal,
      () => this.core.closed,
    );
  }

  /** Who leads now (`remainingMs` is `null`: the session timeout is the lease), or `null`. */
  async leader(): Promise<LeaderInfo | null> {
    this.core.assertOpen();
    return this.#leaderOf(await readQueue(this.core, this.#dir));
  }

  /** The leader of `sorted` (the queue), read again if its node went meanwhile. */
  async #leaderOf(sorted: string[]): Promise<LeaderInfo | null> {
    for (let queue = sorted; ; queue = await readQueue(this.core, this.#dir)) {
      const first = queue[0];
      if (first === undefined) return null;
      const read = await this.#node(first);
      if (read) return { term: czxidOf(read.stat), label: read.label, fingerprint: read.fingerprint, since: Number(read.stat.ctime), remainingMs: null };
    }
  }

  /** A candidate node's data and stat, or `null` when it is gone. */
  async #node(child: string): Promise<{ stat: Stat; label: string; fingerprint: string } | null> {
    try {
      const [data, stat] = await this.core.session.call<[Buffer | undefined, Stat]>((c, cb) => c.getData(`${this.#dir}/${child}`, (error, d, s) => cb(error, [d, s])));
      return { stat, ...decodeData(data) };
    } catch (error) {
      if (zkCode(error) === ZK.NO_NODE) return null;
      throw wrap(error);
    }
  }

  /** The leader and the waiting candidates (for operators and tools); `lastTerm` is the leader's term (0 when none). */
  async inspect(): Promise<ElectionInfo> {
    this.core.assertOpen();
    const sorted = await readQueue(this.core, this.#dir);
    const leader = await this.#leaderOf(sorted);
    const candidates: CandidateInfo[] = [];
    for (const child of sorted.slice(1)) {
      const read = await this.#node(child);
      if (read) candidates.push({ label: read.label, fingerprint: read.fingerprint });
    }
    return { name: this.name, leader, candidates, lastTerm: leader?.term ?? 0 };
  }

  /**
   * Deletes the leader's node, whoever it is: its `signal` aborts (`taken-over`), the next candidate leads. For operators.
   * @returns true if a leader was deposed
   */
  forceResign(): Promise<boolean> {
    this.core.assertOpen();
    return deleteHolders(this.core, this.#dir, (sorted) => sorted.slice(0, 1));
  }

  /**
   * Observes the leader as the Redis `Election.observe` does: the leader now, then each change in term order, the
   * latest for a slow consumer. Woken by a children watch on the election's directory (no polling).
   */
  observe(options?: ObserveOptions): AsyncGenerator<ElectionChange, void, undefined> {
    const { signal } = observeParams(options);
    const core = this.core;
    core.assertOpen();
    const dir = this.#dir;
    let onChange: (() => void) | undefined;
    let armed: number | undefined; // the session generation the children watch is armed in
    const read = async (): Promise<LeaderInfo | null> => {
      const session = core.session;
      const { generation } = await session.current();
      let children: string[];
      if (armed === generation) {
        children = await session.call<string[]>((c, cb) => c.getChildren(dir, cb), undefined, undefined, generation);
      } else {
        armed = generation;
        const watcher = (): void => {
          if (armed === generation) armed = undefined;
          onChange?.();
        };
        try {
          children = await session.call<string[]>((c, cb) => c.getChildren(dir, watcher, cb), undefined, undefined, generation);
        } catch (error) {
          armed = undefined;
          throw wrap(error);
        }
      }
      return this.#leaderOf(sortQueue(children));
    };
    const subscribe = async (cb: () => void): Promise<() => void> => {
      await core.ensureDir(dir);
      onChange = cb;
      const onLost = (): void => {
        armed = undefined;
        cb();
      };
      core.session.on('lost', onLost);
      return () => {
        onChange = undefined;
        core.session.off('lost', onLost);
      };
    };
    // the watch wakes the observer; the session timeout bounds a sleep in case a watch was lost with a connection
    return observeLeader(read, subscribe, () => core.settings.sessionTimeout, signal, () => core.closed, core.holds);
  }
}
