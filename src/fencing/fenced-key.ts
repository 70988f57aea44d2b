/**
 * The resource side of fencing, for a value kept in Redis: a write carries the writer's fencing token and is
 * applied atomically only if no newer token was accepted before. A holder that paused past its lease, and whose
 * lock has since gone to another holder with a newer token, is turned away with a {@link StaleTokenError}.
 *
 * Tokens are comparable only within one lock name: guard one resource with one lock name.
 *
 * @module
 */
import type { Core } from '../core.js';
import { StaleTokenError } from '../errors.js';
import { checkInt, checkKnownKeys, checkOptions, optDuration } from '../internal/validate.js';
import { scripts } from '../lua/scripts.gen.js';

/** Options of {@link FencedKey.set}. */
export interface FencedSetOptions {
  /**
   * Expire the record (value and last token) after this many ms. Once expired, the last accepted token is
   * forgotten, so keep it longer than any lease of the lock that guards the key.
   * @default undefined: no expiry
   */
  ttl?: number;
}

/** The record a {@link FencedKey} holds. */
export interface FencedValue {
  /** The value, or `null` when never set or deleted. */
  value: string | null;
  /** The newest token accepted so far (0 when none). */
  token: number;
}

function checkToken(value: unknown): number {
  return checkInt(value, 'token', 1);
}

/**
 * A Redis value guarded by fencing tokens, from `holdfast.fencedKey(name)`.
 *
 * @example
 * ```ts
 * await using lock = await holdfast.lock('report').acquire();
 * await holdfast.fencedKey('report').set(JSON.stringify(report), lock.token); // throws StaleTokenError if stale
 * ```
 */
export class FencedKey {
  /** @internal */
  constructor(
    /** @internal */
    readonly core: Core,
    /** The resource's name. */
    readonly name: string,
  ) {}

  /**
   * Writes `value` with fencing token `token`. A token equal to the last accepted one is the same holder writing
   * again and is accepted; an older one is rejected and nothing is written.
   * @throws {StaleTokenError} when a newer token was already accepted
   */
  async set(value: string, token: number, options?: FencedSetOptions): Promise<void> {
    const [ok, current] = await this.#write('set', value, token, options);
    if (!ok) throw new StaleTokenError(this.name, token, current);
  }

  /** Like {@link FencedKey.set}, but returns false instead of throwing for a stale token. */
  async trySet(value: string, token: number, options?: FencedSetOptions): Promise<boolean> {
    return (await this.#write('set', value, token, options))[0];
  }

  /**
   * Deletes the value with fencing token `token`; the token is remembered, so a stale writer cannot write after it.
   * @throws {StaleTokenError} when a newer token was already accepted
   */
  async delete(token: number): Promise<void> {
    const [ok, current] = await this.#write('del', '', token, undefined);
    if (!ok) throw new StaleTokenError(this.name, token, current);
  }

  /** The value and the newest token accepted so far. */
  async get(): Promise<FencedValue> {
    this.core.assertOpen();
    const key = this.core.keys.fenced(this.name);
    const [value, token] = (await this.core.command(['HMGET', key, 'v', 't'], key)) as [string | null, string | null];
    return { value: value ?? null, token: token === null || token === undefined ? 0 : Number(token) };
  }

  async #write(op: 'set' | 'del', value: unknown, token: unknown, options: FencedSetOptions | undefined): Promise<[boolean, number]> {
    if (op === 'set' && typeof value !== 'string') throw new TypeError(`value must be a string, got ${value === null ? 'null' : typeof value}`);
    const t = checkToken(token);
    const opts = checkOptions<FencedSetOptions>(options);
    checkKnownKeys(opts, ['ttl']);
    const ttl = optDuration(opts.ttl, 'options.ttl') ?? 0;
    this.core.assertOpen();
    const reply = await this.core.run(scripts['fenced/write'], [this.core.keys.fenced(this.name)], [t, op, value as string, ttl]);
    return [reply[0] === 1, reply[1] ?? 0];
  }
}
