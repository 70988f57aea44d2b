/**
 * One unref'd timer for every lease of the process. A lease is usually released long before its first renewal is
 * due, and a `setTimeout` per hold, cleared a moment later, costs more than the rest of an uncontended acquire's
 * JavaScript (Node creates and drops a timer list for the duration each time). Here arming is a heap push, disarming
 * marks the entry dead; dead entries are dropped when they come due or when they outnumber the live ones.
 */

/** What the queue calls when an entry comes due. */
export interface Due {
  /** @internal */
  due(): void;
}

/** A scheduled call, cancelled with {@link TimerQueue.cancel}. */
export interface TimerEntry {
  readonly at: number;
  target: Due | undefined;
}

export class TimerQueue {
  readonly #heap: TimerEntry[] = [];
  #dead = 0;
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;

  constructor(private readonly clock: () => number) {}

  /** Calls `target.due()` at monotonic time `at` (or soon after). */
  add(at: number, target: Due): TimerEntry {
    const entry: TimerEntry = { at, target };
    const heap = this.#heap;
    heap.push(entry);
    this.#up(heap.length - 1);
    if (at < this.#timerAt) this.#arm(at);
    return entry;
  }

  /** Stops a scheduled call. Idempotent. */
  cancel(entry: TimerEntry | undefined): void {
    if (!entry || entry.target === undefined) return;
    entry.target = undefined;
    this.#dead++;
    if (this.#dead > 64 && this.#dead > this.#heap.length / 2) this.#compact();
  }

  /** Entries scheduled and not yet due, dead ones included (for tests). */
  get size(): number {
    return this.#heap.length;
  }

  #arm(at: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, Math.ceil(at - this.clock())));
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const heap = this.#heap;
    const t = this.clock();
    const due: Due[] = [];
    while (heap.length > 0 && (heap[0] as TimerEntry).at <= t) {
      const entry = this.#pop();
      if (entry.target) {
        due.push(entry.target);
        entry.target = undefined;
      } else {
        this.#dead--;
      }
    }
    this.#dropDeadHead();
    const next = heap[0];
    if (next) this.#arm(next.at);
    for (const target of due) {
      try {
        target.due();
      } catch {
        /* a target's bug must not stop the others */
      }
    }
  }

  #dropDeadHead(): void {
    const heap = this.#heap;
    while (heap.length > 0 && (heap[0] as TimerEntry).target === undefined) {
      this.#pop();
      this.#dead--;
    }
  }

  #compact(): void {
    const live = this.#heap.filter((e) => e.target !== undefined);
    this.#heap.length = 0;
    this.#dead = 0;
    for (const e of live) {
      this.#heap.push(e);
      this.#up(this.#heap.length - 1);
    }
    const next = this.#heap[0];
    if (!next) {
      if (this.#timer) clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerAt = Infinity;
    } else if (next.at > this.#timerAt) {
      this.#arm(next.at);
    }
  }

  #pop(): TimerEntry {
    const heap = this.#heap;
    const top = heap[0] as TimerEntry;
    const last = heap.pop() as TimerEntry;
    if (heap.length > 0) {
      heap[0] = last;
      this.#down(0);
    }
    return top;
  }

  #up(i: number): void {
    const heap = this.#heap;
    const entry = heap[i] as TimerEntry;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent] as TimerEntry;
      if (p.at <= entry.at) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = entry;
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const entry = heap[i] as TimerEntry;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (right < n && (heap[right] as TimerEntry).at < (heap[child] as TimerEntry).at) child = right;
      const c = heap[child] as TimerEntry;
      if (c.at >= entry.at) break;
      heap[i] = c;
      i = child;
    }
    heap[i] = entry;
  }
}
