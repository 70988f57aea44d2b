/**
 * A benchmark worker process (forked by bench/run.ts): sets up one library, runs its share of the contenders in a
 * loop (acquire → hold → release) between two wall-clock instants, and sends back every acquisition.
 */
import { setMaxListeners } from 'node:events';
import { failures, subjects, type Setup } from './peers.js';

export interface SetupMessage {
  type: 'setup';
  subject: string;
  url: string;
  key: string;
  /** Global ids of the contenders this process runs. */
  contenders: number[];
  holdMs: number;
  /**
   * Drain mode: each contender acquires once (they all queue behind a lock the orchestrator holds), the worker says
   * `drained` when its contenders are done and closes only on `finish`, so the orchestrator can read the Redis
   * counters between the first and the last hand-off.
   */
  once?: boolean;
}
export interface GoMessage {
  type: 'go';
  startAt: number;
  endAt: number;
}
/**
 * One acquisition: contender id, wall time acquired, wait (ms), cycle time (acquire start → released, ms), wall time
 * the release was called.
 */
export type Event = [contender: number, acquiredAt: number, waitMs: number, cycleMs: number, releaseAt: number];
export interface ResultMessage {
  type: 'result';
  events: Event[];
  failures: number;
  holdMs: number[];
  error?: string;
}

/** Wall-clock ms with sub-ms resolution, comparable across processes of one machine. */
const wall = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

let setup: Setup | undefined;
let finish: (() => void) | undefined;
let current: SetupMessage | undefined;

async function onSetup(message: SetupMessage): Promise<void> {
  const subject = subjects.find((s) => s.id === message.subject);
  if (!subject) throw new Error(`unknown subject ${message.subject}`);
  current = message;
  setup = await subject.setup(message.url, message.key);
  process.send?.({ type: 'ready' });
}

async function onGo(message: GoMessage): Promise<void> {
  const run = current;
  const lib = setup;
  if (!run || !lib) throw new Error('go before setup');
  const events: Event[] = [];
  const holds: number[] = [];
  const failuresBefore = failures.n;
  const controller = new AbortController();
  setMaxListeners(0, controller.signal); // every waiting contender listens on it
  await sleep(Math.max(0, message.startAt - wall()));
  const stopTimer = setTimeout(() => controller.abort(), Math.max(0, message.endAt - wall()));
  let error: string | undefined;
  const loops = run.contenders.map(async (id) => {
    const acquire = lib.contender();
    for (let i = 0; !controller.signal.aborted && !(run.once && i > 0); i++) {
      const started = wall();
      let release;
      try {
        release = await acquire(controller.signal);
      } catch (e) {
        if (controller.signal.aborted) break;
        error ??= String(e);
        await sleep(1);
        continue;
      }
      const acquiredAt = wall();
      if (run.holdMs > 0) {
        await sleep(run.holdMs);
        if (holds.length < 2000) holds.push(wall() - acquiredAt);
      }
      const releaseAt = wall();
      try {
        await release();
      } catch (e) {
        error ??= String(e);
      }
      events.push([id, acquiredAt, acquiredAt - started, wall() - started, releaseAt]);
    }
  });
  // Peers cannot be aborted mid-wait; they get the lock quickly once the others stop, or their connection is closed.
  await Promise.race([Promise.allSettled(loops), sleep(message.endAt - wall() + 3000)]);
  clearTimeout(stopTimer);
  if (run.once) {
    const finished = new Promise<void>((resolve) => (finish = resolve));
    process.send?.({ type: 'drained' });
    await finished;
  }
  await lib.close().catch(() => {});
  await Promise.race([Promise.allSettled(loops), sleep(500)]);
  setup = undefined;
  const result: ResultMessage = { type: 'result', events, failures: failures.n - failuresBefore, holdMs: holds };
  if (error !== undefined) result.error = error;
  process.send?.(result);
}

process.on('message', (message: SetupMessage | GoMessage | { type: 'exit' | 'finish' }) => {
  const done = (e: unknown): void => void process.send?.({ type: 'fatal', error: String(e) });
  if (message.type === 'setup') onSetup(message).catch(done);
  else if (message.type === 'go') onGo(message).catch(done);
  else if (message.type === 'finish') finish?.();
  else process.exit(0);
});
// A parent that asks (bench/throughput.ts) is told once this process has loaded: booting a worker under tsx takes
// seconds of CPU, which must not overlap what the parent measures in its own process meanwhile.
if (process.env.HOLDFAST_BENCH_WORKER_BOOTED === '1') process.send?.({ type: 'booted' });
process.on('unhandledRejection', () => {
  /* a peer's background rejection after its connection was closed */
});
