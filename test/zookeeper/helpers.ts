/** Shared helpers of the ZooKeeper tests (not a test file). */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, before } from 'node:test';
import { ZooKeeperHoldfast, type ZooKeeperHoldfastOptions } from '../../src/zookeeper/index.js';
import { ZkCluster } from '../support/zookeeper.js';

const WORKER = fileURLToPath(new URL('./fixtures/zk-worker.ts', import.meta.url));

/** A worker child process and the JSON lines it printed. */
export interface Worker {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  /** Resolves with the first line matching `pred` (already printed or future). */
  waitFor(pred: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
}

export function startWorker(args: string[]): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: Record<string, unknown>[] = [];
  const waiters: { pred: (l: Record<string, unknown>) => boolean; resolve: (l: Record<string, unknown>) => void }[] = [];
  createInterface({ input: child.stdout }).on('line', (text) => {
    let line: Record<string, unknown>;
    try {
      line = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    lines.push(line);
    for (const w of [...waiters]) {
      if (w.pred(line)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  return {
    child,
    lines,
    exited,
    waitFor(pred, timeoutMs = 20_000) {
      const found = lines.find(pred);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`worker did not print the expected line; got ${JSON.stringify(lines.slice(-5))}`)), timeoutMs);
        waiters.push({
          pred,
          resolve: (l) => {
            clearTimeout(timer);
            resolve(l);
          },
        });
      });
    },
  };
}

/** A connected client; closed by the returned dispose. */
export async function makeZk(connect: string, options: Omit<ZooKeeperHoldfastOptions, 'connect'> = {}): Promise<ZooKeeperHoldfast> {
  const zk = new ZooKeeperHoldfast({ connect, sessionTimeout: 4000, ...options });
  await zk.connect();
  return zk;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A unique lock name per test. */
export const uniq = (base: string): string => `${base}-${Math.random().toString(36).slice(2, 8)}`;

/**
 * Starts a ZooKeeper and two clients on it before the suite's tests (handing them to `started`), and closes them
 * after: the setup most ZooKeeper suites share.
 */
export function twoClients(started: (zk: ZkCluster, a: ZooKeeperHoldfast, b: ZooKeeperHoldfast) => void): void {
  let zk: ZkCluster | undefined;
  let a: ZooKeeperHoldfast | undefined;
  let b: ZooKeeperHoldfast | undefined;
  before(async () => {
    zk = await ZkCluster.start();
    a = await makeZk(zk.connectionString);
    b = await makeZk(zk.connectionString);
    started(zk, a, b);
  });
  after(async () => {
    await a?.close();
    await b?.close();
    await zk?.stop();
  });
}
