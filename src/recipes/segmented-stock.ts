/**
 * A segmented stock, after the classic lock segmentation for stock deduction under heavy load (like Java's
 * LongAdder): the stock is split into N segment counters. `take(n)` takes from one segment picked at random in one
 * small atomic script; only when that segment is short does it fall back to one script that sees every segment,
 * moves on to a segment that has n, or combines several. The segments share the stock's `{name}` hash tag (one
 * Redis Cluster slot), which is what lets the fallback see them all at once: it never oversells, and never refuses
 * while the segments hold n in total — without locks, and without partial takes to compensate after a crash.
 *
 * @module
 */
import { randomInt } from 'node:crypto';
import type { Core } from '../core.js';
import { checkInt, checkKnownKeys, checkName, checkOptions } from '../internal/validate.js';
import { scripts } from '../lua/scripts.gen.js';

/** Options of {@link SegmentedStock}. */
export interface SegmentedStockOptions {
  /**
   * How many segments the stock is split into. Every instance must use the same number for the same name.
   * @default 8
   */
  segments?: number;
}

/** Most segments a stock can have. */
export const MAX_SEGMENTS = 1024;

/**
 * A stock (or any counter that must not go below zero) split into segments. Get one from
 * `holdfast.segmentedStock(name, { segments })`.
 *
 * @example
 * ```ts
 * const stock = holdfast.segmentedStock('sku:1234', { segments: 16 });
 * await stock.set(10_000);
 * if (await stock.take(2)) await createOrder(); // on failure to order: await stock.restock(2)
 * ```
 */
export class SegmentedStock {
  readonly #core: Core;
  readonly #keys: string[];

  /** @internal */
  constructor(
    core: Core,
    /** The stock's name. */
    readonly name: string,
    options?: SegmentedStockOptions,
  ) {
    checkName(name);
    const opts = checkOptions<SegmentedStockOptions>(options);
    checkKnownKeys(opts, ['segments']);
    const segments = opts.segments === undefined ? 8 : checkInt(opts.segments, 'options.segments', 1, MAX_SEGMENTS);
    this.#core = core;
    this.#keys = Array.from({ length: segments }, (_, i) => core.keys.stockSegment(name, i));
  }

  /** How many segments the stock is split into. */
  get segments(): number {
    return this.#keys.length;
  }

  /**
   * Takes `n` units if the stock holds that many (in total, across segments), atomically.
   * @returns true when taken, false when the stock holds fewer than `n`
   */
  async take(n = 1): Promise<boolean> {
    checkInt(n, 'n', 1);
    this.#core.assertOpen();
    const start = randomInt(this.#keys.length);
    const first = await this.#core.run(scripts['stock/take'], [this.#keys[start] as string], [n]);
    if (first[0] === 1) return true;
    if (this.#keys.length === 1) return false;
    const all = await this.#core.run(scripts['stock/take-any'], this.#keys, [n, ((start + 1) % this.#keys.length) + 1]);
    return all[0] === 1;
  }

  /**
   * Adds `n` units, spread evenly over the segments (e.g. a cancelled order's units going back).
   * @returns the total after the change
   */
  async restock(n: number): Promise<number> {
    checkInt(n, 'n', 0);
    this.#core.assertOpen();
    return Number(await this.#core.run(scripts['stock/add'], this.#keys, [n, 'add', randomInt(this.#keys.length) + 1]));
  }

  /** Replaces the stock with `total` units, spread evenly over the segments. */
  async set(total: number): Promise<void> {
    checkInt(total, 'total', 0);
    this.#core.assertOpen();
    await this.#core.run(scripts['stock/add'], this.#keys, [total, 'set', 1]);
  }

  /** The units left in total (read in one step). */
  async available(): Promise<number> {
    return (await this.availableBySegment()).total;
  }

  /** The units left in total and in each segment (read in one step). */
  async availableBySegment(): Promise<{
    /** Units left in all segments. */
    total: number;
    /** Units left in each segment, by index. */
    segments: number[];
  }> {
    this.#core.assertOpen();
    const reply = await this.#core.run(scripts['stock/available'], this.#keys, []);
    return { total: Number(reply[0] ?? 0), segments: reply.slice(1).map(Number) };
  }
}
