/**
 * Client worker processes for fault injection: `node --import tsx <script>` children with an IPC channel, which the
 * test can freeze (SIGSTOP), thaw (SIGCONT) or kill -9 — a holder that is paused or crashes is a separate process,
 * exactly as in production.
 *
 * @module
 */
import { fork, type ChildProcess } from 'node:child_process';

/** One worker process. */
export class WorkerProcess<Message = unknown> {
  readonly #child: ChildProcess;
  readonly #listeners = new Set<(m: Message) => void>();
  readonly exited: Promise<number | null>;
  paused = false;

  private constructor(
    readonly id: string,
    child: ChildProcess,
  ) {
    this.#child = child;
    child.on('message', (m) => {
      for (const l of [...this.#listeners]) l(m as Message);
    });
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /**
   * Forks `script` with `args`; stdout is discarded, stderr inherited. A `.ts` script runs under tsx (about a second
   * of start-up on a small machine: bundle it first when starting many).
   */
  static spawn<M>(id: string, script: string, args: string[], options: { env?: NodeJS.ProcessEnv } = {}): WorkerProcess<M> {
    const child = fork(script, args, {
      execArgv: script.endsWith('.ts') ? ['--import', 'tsx'] : [],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      env: { ...process.env, ...options.env },
    });
    return new WorkerProcess<M>(id, child);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }
  get alive(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** Calls `fn` for every IPC message; returns an unsubscribe function. */
  onMessage(fn: (m: Message) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /** Resolves with the first message `match` accepts, or rejects after `timeoutMs` or when the process exits. */
  waitFor(match: (m: Message) => boolean, timeoutMs: number): Promise<Message> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`worker ${this.id}: no matching message within ${timeoutMs} ms`)), timeoutMs);
      const off = this.onMessage((m) => {
        if (match(m)) done(undefined, m);
      });
      const onExit = () => done(new Error(`worker ${this.id} exited`));
      this.#child.once('exit', onExit);
      const done = (error?: Error, m?: Message) => {
        clearTimeout(timer);
        off();
        this.#child.off('exit', onExit);
        if (error) reject(error);
        else resolve(m as Message);
      };
    });
  }

  send(message: unknown): void {
    if (this.alive && this.#child.connected) this.#child.send(message as never);
  }

  /** SIGSTOP: the process freezes mid-instruction (a GC pause, a VM stall). */
  pause(): void {
    if (!this.alive) return;
    this.#child.kill('SIGSTOP');
    this.paused = true;
  }

  /** SIGCONT. */
  resume(): void {
    if (!this.alive) return;
    this.#child.kill('SIGCONT');
    this.paused = false;
  }

  /** kill -9: no cleanup, no release; resolves on exit. */
  async kill(): Promise<void> {
    if (!this.alive) return;
    this.#child.kill('SIGKILL');
    await this.exited;
  }

  /** Sends `stopMessage` and waits up to `timeoutMs` for a clean exit, then kills. */
  async stop(stopMessage: unknown, timeoutMs: number): Promise<void> {
    if (!this.alive) return;
    if (this.paused) this.resume();
    this.send(stopMessage);
    const timer = new Promise((r) => setTimeout(r, timeoutMs).unref());
    await Promise.race([this.exited, timer]);
    await this.kill();
  }
}
