/**
 * One demo worker process: it connects once, then for every run the demo sends it (over IPC) loops "acquire the
 * lock, read the shared counter, add one, write it, release" until the run's end, reporting each step as a JSON
 * line on stdout. The faulty worker injects the run's fault once. Started by `holdfast demo` as a hidden
 * subcommand of the same program (`holdfast __demo-worker`).
 *
 * @module
 */
import { writeSync } from 'node:fs';
import { Holdfast } from '../../index.js';
import { connect } from '../connect.js';
import type { DemoEvent } from './analyze.js';
import { acquire, type DemoKeys, type FaultId, type SchemeId } from './schemes.js';

/** What the demo asks a worker to do. */
export interface RunOrder {
  type: 'run';
  scheme: SchemeId;
  fault: FaultId;
  /** This worker injects the fault. */
  faulty: boolean;
  /** The fault strikes at this worker's first grant at least this long after `startAt`, ms. */
  faultAfterMs: number;
  keys: DemoKeys;
  /** The holdfast scheme's key prefix. */
  prefix: string;
  leaseMs: number;
  retryMs: number;
  pauseMs: number;
  slowMs: number;
  /** The critical section's own work, ms. */
  workMs: number;
  startAt: number;
  endAt: number;
}

const epoch = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, Math.max(0, ms)));

/** A stop-the-world pause: the whole process, timers and watchdog included, does nothing for `ms`. */
function freeze(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Writes one line to the demo synchronously (a pipe: the line is out before a crash). */
function send(message: object): void {
  let data = Buffer.from(JSON.stringify(message) + '\n');
  while (data.length > 0) {
    try {
      data = data.subarray(writeSync(1, data));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1); // the pipe is full: the demo is reading
    }
  }
}

/** The worker's main: `holdfast __demo-worker <id>`, with the URL in `HOLDFAST_DEMO_URL`. */
export async function demoWorker(argv: string[]): Promise<number> {
  const id = argv[0] ?? 'w?';
  const connection = await connect({ url: process.env.HOLDFAST_DEMO_URL, connectTimeout: 3000 });
  send({ type: 'ready', w: id });
  const orders: RunOrder[] = [];
  let wake: (() => void) | undefined;
  let exiting = false;
  process.on('message', (m: RunOrder | { type: 'exit' }) => {
    if (m.type === 'exit') exiting = true;
    else orders.push(m);
    wake?.();
  });
  process.on('disconnect', () => {
    exiting = true;
    wake?.();
  });
  for (;;) {
    const order = orders.shift();
    if (!order) {
      if (exiting) break;
      await new Promise<void>((r) => (wake = r));
      continue;
    }
    const events = await runOnce(id, order, connection.transport, connection.client);
    send({ type: 'done', w: id, events });
  }
  await connection.close();
  return 0;
}

async function runOnce(w: string, order: RunOrder, transport: import('../../client.js').RedisTransport, client: unknown): Promise<DemoEvent[]> {
  const events: DemoEvent[] = [];
  const emit = (e: DemoEvent) => events.push(e);
  const holdfast =
    order.scheme === 'holdfast'
      ? new Holdfast({
          redis: client,
          prefix: order.prefix,
          watchdogLease: order.leaseMs,
          // renew often: on a busy machine a renewal may be late by a good part of the lease
          watchdogInterval: Math.floor(order.leaseMs / 5),
          commandTimeout: 2000,
        })
      : undefined;
  let faultDone = !order.faulty;
  let slowLink = false;
  try {
    await sleep(order.startAt - epoch());
    while (epoch() < order.endAt) {
      // the fault strikes at the faulty worker's first grant past faultAfterMs (decided at the grant, so a worker
      // that started waiting earlier still gets it)
      let inject = false;
      const session = await acquire(order.scheme, {
        transport,
        keys: order.keys,
        worker: w,
        leaseMs: order.leaseMs,
        retryMs: order.retryMs,
        deadline: order.endAt,
        holdfast,
        onGranted: () => {
          const t = epoch();
          emit({ t, w, type: 'acquired' });
          inject = !faultDone && t >= order.startAt + order.faultAfterMs;
          if (inject) faultDone = true;
          // a slow link stays slow: every later release of this worker is delayed too
          if (inject && order.fault === 'slow-release') slowLink = true;
          if (inject && order.fault === 'crash') {
            // die like a power cut: no release, no cleanup, timers gone. The demo learns it from this line.
            send({ type: 'crashed', w, events: [...events, { t: epoch(), w, type: 'crashed' }] });
            process.kill(process.pid, 'SIGKILL');
          }
        },
      });
      if (!session) {
        emit({ t: epoch(), w, type: 'gave-up' });
        break;
      }
      const value = await session.read();
      if (value === null || session.lost) {
        // holdfast: the fence or the loss signal said this hold is stale: do not write
        emit({ t: epoch(), w, type: 'skipped', why: value === null ? 'stale-read' : 'lost' });
      } else {
        if (inject && order.fault === 'pause') {
          // strikes after the holder's last look at its loss signal: the window only fencing closes
          const from = epoch();
          freeze(order.pauseMs);
          emit({ t: epoch(), w, type: 'paused', from });
        }
        await sleep(order.workMs);
        const ok = await session.write(value + 1);
        emit({ t: epoch(), w, type: 'written', ok });
      }
      emit({ t: epoch(), w, type: 'release-start' });
      const outcome = await session.release(slowLink ? order.slowMs : 0);
      emit({ t: epoch(), w, type: 'released', outcome });
      // a moment outside the lock, so that the one who just released does not always win again
      await sleep(Math.random() * order.retryMs);
    }
  } catch (error) {
    // a worker that fails is reported, not silently dropped: its events so far still count
    emit({ t: epoch(), w, type: 'failed', message: error instanceof Error ? error.message : String(error) });
  } finally {
    await holdfast?.close();
  }
  return events;
}
