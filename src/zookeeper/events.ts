/**
 * Lock events on ZooKeeper, for those who only want to know: wait until a lock is free, and hear its releases. Both
 * read the queue with a children watch and look again each time it fires (ZooKeeper's own wake-up, the same watches
 * the waiters use), so nothing is published and nothing is polled. A deletion is a deletion: a release, a forced
 * unlock and a session that ended all look the same here.
 *
 * @module
 */
import { optFunction } from '../internal/validate.js';
import { now } from '../internal/clock.js';
import { sleepUntilWoken, type ReleaseEvent } from '../internal/events.js';
import { sortQueue, wrap, type ZkCore } from './queue.js';
import { ZK, zkCode, type Session } from './session.js';

/** How a primitive's queue reads for these events. */
export interface QueueView {
  dir: string;
  /** The nodes that make it busy, from the queue in sequence order. */
  busy: (sorted: string[]) => string[];
  /**
   * True when a look that finds none of the busy nodes of the previous look (they all went, and others hold it now)
   * counts as free: the lock was handed on (an exclusive lock's release heard). False: only an empty `busy` is free.
   */
  handOff: boolean;
}

/** Pause after a transient failure (connection loss, an unanswered call) before looking again. */
const RETRY_MS = 100;

/** Errors after which a read may simply be made again (the session, and its watches, may well be alive). */
function transient(error: unknown): boolean {
  const code = zkCode(error);
  return code === ZK.CONNECTION_LOSS || code === ZK.OPERATION_TIMEOUT || (error instanceof Error && /did not answer|session was lost/.test(error.message));
}

/**
 * Reads the queue of `dir` and arms a children watch on it: resolves the queue (sorted) and a promise that settles
 * when the watch fires or the session is lost (whichever first), or `null` when the directory does not exist.
 */
async function readWatched(session: Session, dir: string): Promise<{ sorted: string[]; changed: Promise<void>; disarm: () => void } | null> {
  const { generation } = await session.current();
  let fire!: () => void;
  const changed = new Promise<void>((resolve) => (fire = resolve));
  const onLost = (gen: number): void => {
    if (gen === generation) fire();
  };
  session.on('lost', onLost);
  const disarm = (): void => {
    session.off('lost', onLost);
  };
  void changed.then(disarm);
  try {
    const children = await session.call<string[]>((c, cb) => c.getChildren(dir, () => fire(), cb), undefined, undefined, generation);
    return { sorted: sortQueue(children), changed, disarm };
  } catch (error) {
    disarm();
    if (zkCode(error) === ZK.NO_NODE) return null;
    throw error;
  }
}

/**
 * Resolves true once the queue has no busy node (or, with `handOff`, none of the busy nodes of the previous look is
 * left), false when `timeout` passes first (the last look is made at the deadline). Woken by a children watch.
 */
export async function zkWaitUntilFree(core: ZkCore, view: QueueView, timeout: number | undefined, signal: AbortSignal | undefined): Promise<boolean> {
  const deadline = timeout === undefined ? Infinity : now() + timeout;
  let previous: Set<string> | undefined;
  for (;;) {
    signal?.throwIfAborted();
    core.assertOpen();
    let read: Awaited<ReturnType<typeof readWatched>>;
    try {
      read = await readWatched(core.session, view.dir);
    } catch (error) {
      if (!transient(error) || now() >= deadline) throw wrap(error);
      await sleepUntilWoken(Math.min(RETRY_MS, deadline - now()), signal, () => {});
      continue;
    }
    if (!read) return true; // no queue at all: nobody holds it
    const busy = view.busy(read.sorted);
    if (busy.length === 0 || (view.handOff && previous && !busy.some((node) => previous!.has(node)))) {
      read.disarm();
      return true;
    }
    previous = new Set(busy);
    if (now() >= deadline) {
      read.disarm();
      return false;
    }
    try {
      await sleepUntilWoken(deadline - now(), signal, (wake) => void read.changed.then(wake));
    } finally {
      read.disarm();
    }
  }
}

/**
 * Calls `listener` for every hold seen to end in the queue of `dir` until the returned function is called; resolves
 * once the first look is made and watched. `holders` picks the holding nodes of a queue; `sideOf` names the side of
 * a read-write lock's node. A node gone between two looks counts as released when it held the lock on the first
 * look, or would have once the nodes ahead of it that also went were gone (a waiter that gave up in the same moment
 * can be read as a release).
 */
export async function zkOnRelease(
  core: ZkCore,
  name: string,
  dir: string,
  holders: (sorted: string[]) => string[],
  sideOf: ((node: string) => 'read' | 'write') | undefined,
  listener: unknown,
): Promise<() => void> {
  const fn = optFunction<(event: ReleaseEvent) => void>(listener, 'listener');
  if (!fn) throw new TypeError('listener must be a function, got undefined');
  core.assertOpen();
  await core.ensureDir(dir).catch((error: unknown) => {
    throw wrap(error);
  });
  let stopped = false;
  let wakeStop!: () => void;
  const stoppedP = new Promise<void>((resolve) => (wakeStop = resolve));
  const first = await readWatched(core.session, dir).catch((error: unknown) => {
    throw wrap(error);
  });
  let previous = first?.sorted ?? [];
  let pending = first;
  const report = (sorted: string[]): void => {
    const present = new Set(sorted);
    let model = previous;
    for (const node of previous) {
      if (present.has(node)) continue;
      if (holders(model).includes(node)) {
        try {
          fn(sideOf ? { name, kind: 'release', side: sideOf(node) } : { name, kind: 'release' });
        } catch {
          /* a listener's bug must not stop the others */
        }
      }
      model = model.filter((n) => n !== node);
    }
    previous = sorted;
  };
  void (async () => {
    while (!stopped && !core.closed) {
      if (pending) {
        await Promise.race([pending.changed, stoppedP]);
        pending.disarm();
        pending = null;
        if (stopped || core.closed) return;
      }
      try {
        pending = await readWatched(core.session, dir);
        if (pending) report(pending.sorted);
        else {
          // the directory was deleted (by an operator): every node went with it; make it again, and watch it
          report([]);
          core.forgetDir(dir);
          await core.ensureDir(dir);
        }
      } catch {
        // unreachable, or the session is being replaced: look again in a moment
        await Promise.race([new Promise((r) => setTimeout(r, RETRY_MS)), stoppedP]);
      }
    }
  })();
  return () => {
    stopped = true;
    pending?.disarm();
    wakeStop();
  };
}
