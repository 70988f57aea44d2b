/**
 * What every owner-held primitive does before its first attempt: check the acquire options, and decide the owner —
 * an explicit `owner`, the owner this async call chain already holds the lock under (re-entry), or a fresh one.
 */
import type { Core } from '../core.js';
import { checkKnownKeys, checkName, checkOptions, optDuration, optSignal } from './validate.js';
import { checkLease } from './lease.js';

/** The acquire options every owner-held primitive takes. */
export interface BaseAcquireOptions {
  timeout?: number;
  lease?: number;
  signal?: AbortSignal;
  owner?: string;
}

const NO_OPTIONS = Object.freeze({});

/**
 * An acquisition's settings: `options` checked (known keys only, typed values) and the owner resolved. `required`:
 * `acquire()` (no time limit by default) rather than `tryAcquire()` (a single attempt by default). `contextKey`:
 * where `withLock` records the owner of this lock in the async context, for re-entry (`undefined`: a primitive
 * without re-entry). A class, so that the template's acquisition extends it: one object per acquisition.
 */
export class AcquireParams<O extends BaseAcquireOptions = BaseAcquireOptions> {
  /** The options as given (checked). */
  readonly options: Partial<O>;
  /** ms to wait; `undefined` = no limit; 0 = a single attempt. */
  readonly timeout: number | undefined;
  /** The fixed lease, or `undefined` for the watchdog. */
  readonly fixedLease: number | undefined;
  /** The lease Redis is told: the fixed one, or the watchdog's. */
  leaseMs: number;
  readonly signal: AbortSignal | undefined;
  readonly owner: string;
  /** True when the owner id was minted for this call: it cannot hold the lock yet (no re-entry, nothing to undo). */
  readonly fresh: boolean;
  /** Await it (when set) before the first attempt: the client's one-time server check (see `Core.ready`). */
  readonly ready: Promise<void> | undefined;

  constructor(core: Core, options: unknown, known: readonly string[], required: boolean, contextKey: string | undefined) {
    const opts: Partial<O> = options === undefined ? NO_OPTIONS : checkOptions<O>(options);
    if (opts !== NO_OPTIONS) checkKnownKeys(opts, known);
    this.options = opts;
    this.timeout = optDuration(opts.timeout, 'options.timeout', 0) ?? (required ? undefined : 0);
    const given = optDuration(opts.lease, 'options.lease');
    const fixedLease = (this.fixedLease = given === undefined ? undefined : checkLease(given, 'options.lease'));
    this.signal = optSignal(opts.signal, 'options.signal');
    if (opts.owner !== undefined) checkName(opts.owner, 'options.owner');
    core.assertOpen();
    const inherited = contextKey === undefined ? undefined : core.context.getStore()?.get(contextKey);
    const inheritedActive = inherited !== undefined && inherited.active();
    this.fresh = opts.owner === undefined && !inheritedActive;
    this.owner = opts.owner ?? (inheritedActive ? inherited.owner : core.newOwner());
    this.leaseMs = fixedLease ?? core.settings.watchdogLease;
    this.ready = core.ready();
  }
}
