/**
 * Waiting without polling. One subscriber connection per holdfast client; one Redis subscription per channel,
 * shared by every local waiter on it and dropped a little after the last one leaves. A message on a channel wakes
 * as many local waiters as it says (a number), or all of them (`a`), oldest first. A message `=<tag>` wakes only the
 * local waiters registered with that tag (the fair lock names the owner it handed the lock to, so one channel per
 * client serves all of that client's waiters and a hand-off wakes exactly one of them). A message `+<payload>:<tag>`
 * does the same and leaves `payload` with the listener (the fair lock's hand-off carries the fencing token).
 * A message `<count>:<tag>` (a lock's release that reserved it for the waiter `tag`) wakes that waiter where it waits;
 * where it does not, the local waiters are woken only once the reservation has lapsed.
 *
 * A wake that arrives while its waiter is between attempts is remembered, never lost: the next `wait()` returns at once.
 *
 * The subscriber connection lives only while something waits or observes: once the last channel is dropped it is
 * closed (the next wait opens a new one), so it never keeps a process alive that forgot `holdfast.close()`. Every
 * timer here is unref'd.
 */
import type { RedisSubscriber } from '../client.js';
import type { Store } from '../store.js';
import { ClientClosedError } from '../errors.js';
import { withTimeout, toHoldfastError } from '../script.js';

const IDLE_UNSUBSCRIBE_MS = 2000;
/**
 * A release that reserved a lock for a waiter of another process (`<count>:<tag>`, the tag not waiting here) wakes the
 * waiters here only after this long: the reservation (50 ms, see lua/lock/release-n.lua) and a margin. Until then
 * only the named waiter can take the lock, so waking the others would only make them ask in vain, each in its own
 * round trip, on every hand-off. The late wake covers a named waiter that never comes: its reservation lapses, and
 * the lock is anyone's again.
 */
const RESERVED_WAKE_MS = 60;

interface Channel {
  name: string;
  listeners: Listener[];
  /** Callbacks that see every message and take no wake from the waiters (see `Notifier.observe`). */
  observers: Set<(message: string) => void>;
  subscribed: Promise<void>;
  idle: NodeJS.Timeout | undefined;
  /** Monotonic time until which the last attempt made here expected the resource to stay busy (its retry hint). */
  busyUntil: number;
  /** The late wake of a reservation made for a waiter elsewhere (see {@link RESERVED_WAKE_MS}), while one is due. */
  reservedWake: NodeJS.Timeout | undefined;
}

/** One waiter's registration on a channel. */
export class Listener {
  #woken = false;
  #resolve: ((woken: boolean) => void) | undefined;
  #closed = false;
  #payload: string | undefined;

  constructor(
    readonly seq: number,
    private readonly onClose: (listener: Listener) => void,
    /** Routes `=<tag>` messages to this listener only. */
    readonly tag?: string,
  ) {}

  /** True when a wake is waiting to be taken. */
  get pending(): boolean {
    return this.#woken;
  }
  get closed(): boolean {
    return this.#closed;
  }

  /** The payload of the last `+<payload>:<tag>` wake, once: cleared when taken. */
  takePayload(): string | undefined {
    const payload = this.#payload;
    this.#payload = undefined;
    return payload;
  }

  /** Called by the notifier. Returns false if this listener cannot take a wake. */
  wake(payload?: string): boolean {
    if (this.#closed) return false;
    if (payload !== undefined) this.#payload = payload;
    if (this.#woken) return false;
    this.#woken = true;
    const resolve = this.#resolve;
    if (resolve) {
      this.#resolve = undefined;
      this.#woken = false;
      resolve(true);
    }
    return true;
  }

  /**
   * Sleeps until woken (→ true), `ms` passes (→ false) or `signal` aborts (rejects with its reason).
   * An `ms` of `Infinity` waits for a wake or the signal only.
   */
  wait(ms: number, signal?: AbortSignal): Promise<boolean> {
    signal?.throwIfAborted();
    if (this.#woken) {
      this.#woken = false;
      return Promise.resolve(true);
    }
    if (this.#closed) return Promise.reject(new ClientClosedError());
    return new Promise<boolean>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const finish = (woken: boolean): void => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.#resolve = undefined;
        resolve(woken);
      };
      const onAbort = (): void => {
        if (timer) clearTimeout(timer);
        this.#resolve = undefined;
        reject(signal?.reason);
      };
      this.#resolve = finish;
      this.#reject = (error) => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        reject(error);
      };
      if (Number.isFinite(ms)) {
        timer = setTimeout(() => finish(false), Math.max(0, ms));
        timer.unref();
      }
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  #reject: ((error: Error) => void) | undefined;

  /** Fails a sleeping wait (client closed). */
  fail(error: Error): void {
    const reject = this.#reject;
    this.#resolve = undefined;
    this.#reject = undefined;
    this.#closed = true;
    reject?.(error);
  }

  /** Leaves the channel; an untaken wake passes on to the next waiter. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.onClose(this);
  }
}

/** Shared subscriber and the local waiters of each channel. */
export class Notifier {
  #subscriber: Promise<RedisSubscriber> | undefined;
  /** The close of a subscriber dropped for being idle, while it runs. */
  #retiring: Promise<void> | undefined;
  readonly #channels = new Map<string, Channel>();
  #seq = 0;
  #closed = false;

  constructor(
    private readonly transport: Store,
    private readonly sharded: boolean,
    private readonly timeoutMs: number,
  ) {}

  #connect(): Promise<RedisSubscriber> {
    this.#subscriber ??= this.transport.createSubscriber((channel, message) => this.#onMessage(channel, message), this.sharded);
    return this.#subscriber;
  }

  #onMessage(name: string, message: string): void {
    const channel = this.#channels.get(name);
    if (!channel) return;
    for (const observer of channel.observers) {
      try {
        observer(message);
      } catch {
        /* a listener's bug must not stop the waiters' wake */
      }
    }
    if (message.startsWith('=')) {
      const tag = message.slice(1);
      for (const listener of channel.listeners) if (listener.tag === tag) listener.wake();
      return;
    }
    if (message.startsWith('+')) {
      const colon = message.indexOf(':');
      const payload = message.slice(1, colon);
      const tag = message.slice(colon + 1);
      for (const listener of channel.listeners) if (listener.tag === tag) listener.wake(payload);
      return;
    }
    let count = message === 'a' ? Infinity : Math.max(1, Number.parseInt(message, 10) || 1);
    // '<count>:<tag>': the release reserved the lock for that waiter; wake it first where it waits here
    const colon = message.indexOf(':');
    if (colon > 0) {
      const tag = message.slice(colon + 1);
      let here = false;
      for (const listener of channel.listeners) {
        if (listener.tag !== tag) continue;
        here = true;
        if (listener.wake()) count--;
      }
      if (!here) {
        // reserved for a waiter of another process: the waiters here could not take it yet
        if (channel.reservedWake === undefined && channel.listeners.length > 0) {
          const wakeCount = count;
          channel.reservedWake = setTimeout(() => {
            channel.reservedWake = undefined;
            Notifier.#wake(channel, wakeCount);
          }, RESERVED_WAKE_MS);
          channel.reservedWake.unref();
        }
        return;
      }
    }
    Notifier.#wake(channel, count);
  }

  /** Wakes up to `count` local waiters of `channel`, oldest first. */
  static #wake(channel: Channel, count: number): void {
    for (const listener of channel.listeners) {
      if (count <= 0) break;
      if (listener.wake()) count--;
    }
  }

  /**
   * Hands `message` to the local waiters of `channel` as if it had come from Redis: for a state a script reported in
   * its reply (a fallback that also works while the subscriber connection is down).
   */
  deliver(channel: string, message: string): void {
    this.#onMessage(channel, message);
  }

  /**
   * Registers a waiter on `channel`; resolves once the subscription is confirmed, so no later release is missed.
   * `tag` makes it the target of `=<tag>` messages.
   */
  async listen(name: string, tag?: string): Promise<Listener> {
    const channel = this.#channel(name);
    const target = channel;
    const listener = new Listener(++this.#seq, (l) => this.#leave(target, l), tag);
    channel.listeners.push(listener);
    try {
      await withTimeout(channel.subscribed, this.timeoutMs, `subscribe ${name}`, undefined, this.transport);
    } catch (error) {
      listener.close();
      if (this.#channels.get(name) === channel) {
        this.#channels.delete(name);
        if (channel.idle) clearTimeout(channel.idle);
        if (this.#channels.size === 0) this.#retire();
      }
      throw toHoldfastError(error, `subscribe ${name}`);
    }
    return listener;
  }

  /** The channel `name`, subscribed (or being subscribed) on first use; an idle unsubscription pending is cancelled. */
  #channel(name: string): Channel {
    if (this.#closed) throw new ClientClosedError();
    let channel = this.#channels.get(name);
    if (!channel) {
      const subscribed = this.#connect().then((sub) => sub.subscribe(name));
      const created: Channel = { name, listeners: [], observers: new Set(), subscribed, idle: undefined, busyUntil: 0, reservedWake: undefined };
      channel = created;
      this.#channels.set(name, created);
      // A failed subscription is retried by the next listener.
      subscribed.catch(() => {
        if (this.#channels.get(name) === created && created.listeners.length === 0 && created.observers.size === 0) {
          this.#channels.delete(name);
          if (this.#channels.size === 0) this.#retire();
        }
      });
    }
    if (channel.idle) {
      clearTimeout(channel.idle);
      channel.idle = undefined;
    }
    return channel;
  }

  /**
   * Calls `onMessage` with every message on `channel` until the returned function is called; resolves once the
   * subscription is confirmed. An observer takes no wake from the waiters (a release still wakes as many of them as
   * it says): for those that only want to know, such as `Lock.waitUntilFree` and `Lock.onRelease`.
   */
  async observe(name: string, onMessage: (message: string) => void): Promise<() => void> {
    const channel = this.#channel(name);
    // a distinct function per observer, so the same callback observed twice is two observers
    const observer = (message: string): void => onMessage(message);
    channel.observers.add(observer);
    let done = false;
    const stop = (): void => {
      if (done) return;
      done = true;
      channel.observers.delete(observer);
      this.#idleIfUnused(channel);
    };
    try {
      await withTimeout(channel.subscribed, this.timeoutMs, `subscribe ${name}`, undefined, this.transport);
    } catch (error) {
      stop();
      if (this.#channels.get(name) === channel && channel.listeners.length === 0 && channel.observers.size === 0) {
        this.#channels.delete(name);
        if (channel.idle) clearTimeout(channel.idle);
        if (this.#channels.size === 0) this.#retire();
      }
      throw toHoldfastError(error, `subscribe ${name}`);
    }
    return stop;
  }

  #leave(channel: Channel, listener: Listener): void {
    const i = channel.listeners.indexOf(listener);
    if (i >= 0) channel.listeners.splice(i, 1);
    if (listener.pending) {
      // hand the wake it did not use to the next local waiter
      for (const next of channel.listeners) if (next.wake()) break;
    }
    this.#idleIfUnused(channel);
  }

  /** Unsubscribes `channel` a little after its last waiter and observer left. */
  #idleIfUnused(channel: Channel): void {
    if (channel.listeners.length === 0 && channel.observers.size === 0 && !this.#closed && !channel.idle) {
      channel.idle = setTimeout(() => {
        if (channel.listeners.length > 0 || channel.observers.size > 0 || this.#channels.get(channel.name) !== channel) return;
        this.#channels.delete(channel.name);
        if (channel.reservedWake) clearTimeout(channel.reservedWake);
        if (this.#channels.size === 0) {
          this.#retire();
          return;
        }
        this.#subscriber
          ?.then((sub) => sub.unsubscribe(channel.name))
          .catch(() => {
            /* the connection is gone; nothing to undo */
          });
      }, IDLE_UNSUBSCRIBE_MS);
      channel.idle.unref();
    }
  }

  /**
   * Closes the subscriber connection once no channel is left: nothing waits here, and an open connection would keep
   * the process alive. A wait that comes later opens a new one.
   */
  #retire(): void {
    const sub = this.#subscriber;
    if (!sub) return;
    this.#subscriber = undefined;
    const retiring = sub
      .then((s) => s.close())
      .catch(() => {
        /* never connected, or already gone */
      })
      .finally(() => {
        if (this.#retiring === retiring) this.#retiring = undefined;
      });
    this.#retiring = retiring;
  }

  /** True when `channel` is subscribed (or being subscribed) here: `listen` will not need a new subscription. */
  isSubscribed(channel: string): boolean {
    return this.#channels.has(channel);
  }

  /** How many local waiters are registered on `channel`. */
  waiting(channel: string): number {
    return this.#channels.get(channel)?.listeners.length ?? 0;
  }

  /** Records an attempt's retry hint: the resource behind `channel` is expected to stay busy for `ms`. */
  setBusyFor(channel: string, ms: number): void {
    const c = this.#channels.get(channel);
    if (c) c.busyUntil = performance.now() + ms;
  }

  /** ms the last recorded hint for `channel` has left (0 when none or run out). */
  busyFor(channel: string): number {
    const c = this.#channels.get(channel);
    return c ? Math.max(0, c.busyUntil - performance.now()) : 0;
  }

  /** Number of channels currently subscribed (for tests and inspection). */
  get channelCount(): number {
    return this.#channels.size;
  }

  /** Fails every waiter and closes the subscriber connection. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const channel of this.#channels.values()) {
      if (channel.idle) clearTimeout(channel.idle);
      if (channel.reservedWake) clearTimeout(channel.reservedWake);
      for (const listener of [...channel.listeners]) listener.fail(new ClientClosedError());
      channel.observers.clear();
    }
    this.#channels.clear();
    await this.#retiring;
    const sub = this.#subscriber;
    if (sub) {
      try {
        await (await sub).close();
      } catch {
        /* never connected */
      }
    }
  }
}
