/**
 * A set of live objects for hot paths (the holds a client must release on close, the commands waiting for a reply):
 * an array of slots and a free list. A `Set` under constant add/delete churn keeps rebuilding its hash table, and a
 * discarded table that had grown old still points at young objects: the garbage collector keeps those alive through
 * the next scavenge and promotes them, with everything they reach (a whole acquire's promises). Measured on the
 * independent-keys loop, that made garbage collection most of holdfast's own CPU per acquire and release. Here the
 * array is only ever grown, and a freed slot is simply emptied.
 *
 * An object is in at most one `LiveSet` at a time: it carries its own slot number, under a symbol key, so that only
 * a live set reads or writes it.
 */

/** The key of an object's slot number in its live set. */
export const liveSlot: unique symbol = Symbol('liveSlot');

/** An object a {@link LiveSet} can hold: its slot number lives on it. */
export interface Slotted {
  /** @internal The slot it has in its live set, or `undefined`. */
  [liveSlot]?: number | undefined;
}

export class LiveSet<T extends Slotted> {
  #items: (T | undefined)[] = [];
  #free: number[] = [];
  #size = 0;

  /** Adds `item` (a no-op when it is in already). */
  add(item: T): this {
    if (this.has(item)) return this;
    const slot = this.#free.length > 0 ? (this.#free.pop() as number) : this.#items.length;
    this.#items[slot] = item;
    item[liveSlot] = slot;
    this.#size++;
    return this;
  }

  /** Removes `item`; false when it was not in. */
  delete(item: T): boolean {
    if (!this.has(item)) return false;
    const slot = item[liveSlot] as number;
    this.#items[slot] = undefined;
    item[liveSlot] = undefined;
    this.#free.push(slot);
    this.#size--;
    return true;
  }

  has(item: T): boolean {
    const slot = item[liveSlot];
    return slot !== undefined && this.#items[slot] === item;
  }

  get size(): number {
    return this.#size;
  }

  /** Calls `fn` for every item in (items added during the walk may or may not be visited). */
  forEach(fn: (item: T) => void): void {
    const items = this.#items;
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (item !== undefined) fn(item);
    }
  }

  /** Removes and returns every item. */
  drain(): T[] {
    const all: T[] = [];
    for (const item of this.#items) {
      if (item === undefined) continue;
      item[liveSlot] = undefined;
      all.push(item);
    }
    this.#items = [];
    this.#free = [];
    this.#size = 0;
    return all;
  }

  [Symbol.iterator](): IterableIterator<T> {
    return this.#items.filter((item): item is T => item !== undefined)[Symbol.iterator]();
  }
}
