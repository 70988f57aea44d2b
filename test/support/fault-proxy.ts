/**
 * A TCP proxy for fault injection (modelled on etcd's `pkg/proxy` and Toxiproxy): clients connect to the proxy,
 * the proxy connects to the server, and the test can, per direction, delay (with jitter, keeping byte order),
 * black-hole (swallow bytes, connection stays open), pause (hold bytes and deliver them on resume), cut every
 * connection, refuse new ones, or cut a connection right after it forwarded a request matching a pattern (the
 * request reaches the server, its reply never reaches the client).
 *
 * Directions: `up` = client → server, `down` = server → client.
 *
 * @module
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { freePort } from './redis-server.js';

export type Direction = 'up' | 'down';

interface DirectionState {
  delayMs: number;
  jitterMs: number;
  blackhole: boolean;
  paused: boolean;
}

interface Link {
  client: Socket;
  server: Socket;
  /** Per direction: when the last chunk is due, so delays never reorder bytes. */
  due: Record<Direction, number>;
  /** Per direction: chunks held while paused. */
  held: Record<Direction, Buffer[]>;
  /** Destroy the link when the next server → client chunk arrives (see `cutAfter`'s `afterReply`). */
  cutOnReply?: boolean;
}

/** One proxy listener in front of one server port. */
export class FaultProxy {
  readonly #links = new Set<Link>();
  readonly #state: Record<Direction, DirectionState> = {
    up: { delayMs: 0, jitterMs: 0, blackhole: false, paused: false },
    down: { delayMs: 0, jitterMs: 0, blackhole: false, paused: false },
  };
  #refusing = false;
  #cutOn: { pattern: Buffer; left: number; afterReply: boolean; before: boolean } | undefined;
  #random: () => number = Math.random;
  /** How many connections were cut by `cut()` or `cutAfter()`. */
  cuts = 0;

  private constructor(
    readonly port: number,
    public targetPort: number,
    readonly server: Server,
  ) {}

  /** Starts a proxy on a free loopback port forwarding to `targetPort`. */
  static async start(targetPort: number, options: { random?: () => number; port?: number } = {}): Promise<FaultProxy> {
    const port = options.port ?? (await freePort());
    const accept: { to?: (client: Socket) => void } = {};
    const server = createServer((client) => accept.to?.(client));
    const proxy = new FaultProxy(port, targetPort, server);
    accept.to = (client) => proxy.#accept(client);
    if (options.random) proxy.#random = options.random;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Open client connections. */
  get connections(): number {
    return this.#links.size;
  }

  /** Delays every chunk in `direction` by `ms` ± `jitterMs` (order kept). `delay(dir, 0)` ends it. */
  delay(direction: Direction, ms: number, jitterMs = 0): void {
    this.#state[direction].delayMs = ms;
    this.#state[direction].jitterMs = jitterMs;
  }

  /** Swallows every byte in `direction` (`on = false` ends it; swallowed bytes stay lost). */
  blackhole(direction: Direction, on = true): void {
    this.#state[direction].blackhole = on;
  }

  /** Holds every byte in `direction` until `pause(direction, false)`, then delivers them in order. */
  pause(direction: Direction, on = true): void {
    this.#state[direction].paused = on;
    if (!on) for (const link of this.#links) this.#flush(link, direction);
  }

  /** Refuses (resets) new connections while on. */
  refuse(on = true): void {
    this.#refusing = on;
  }

  /** Destroys every open connection at once (both sides see a reset). */
  cut(): number {
    const n = this.#links.size;
    for (const link of [...this.#links]) this.#close(link);
    this.cuts += n;
    return n;
  }

  /**
   * Arms a one-shot cut: the next `count` client → server chunks that contain `pattern` are forwarded to the server,
   * then that connection is destroyed before any reply can come back. With `afterReply`, the connection is destroyed
   * when the server's next reply arrives (dropped): the request surely ran, only its reply is lost.
   */
  cutAfter(pattern: string | Buffer, count = 1, options: { afterReply?: boolean } = {}): void {
    this.#cutOn = { pattern: Buffer.from(pattern), left: count, afterReply: options.afterReply ?? false, before: false };
  }

  /**
   * Arms a one-shot cut *before* a request: the next client → server chunk that contains `pattern` is dropped (it never
   * reaches the server), its connection is destroyed, and new connections are refused until `heal()` — a request sent
   * into a link that just went down.
   */
  cutBefore(pattern: string | Buffer): void {
    this.#cutOn = { pattern: Buffer.from(pattern), left: 1, afterReply: false, before: true };
  }

  /** Ends every fault (delay, black hole, pause, refusal, armed cut). */
  heal(): void {
    for (const d of ['up', 'down'] as const) {
      this.#state[d].delayMs = 0;
      this.#state[d].jitterMs = 0;
      this.#state[d].blackhole = false;
      this.pause(d, false);
    }
    this.#refusing = false;
    this.#cutOn = undefined;
  }

  /** Closes the listener and every connection. */
  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    if (this.#refusing) {
      client.resetAndDestroy();
      return;
    }
    const server = connect(this.targetPort, '127.0.0.1');
    const link: Link = { client, server, due: { up: 0, down: 0 }, held: { up: [], down: [] } };
    this.#links.add(link);
    client.setNoDelay(true);
    server.setNoDelay(true);
    client.on('data', (chunk: Buffer) => this.#forward(link, 'up', chunk));
    server.on('data', (chunk: Buffer) => this.#forward(link, 'down', chunk));
    const end = () => this.#close(link);
    client.on('close', end);
    server.on('close', end);
    client.on('error', end);
    server.on('error', end);
  }

  #forward(link: Link, direction: Direction, chunk: Buffer): void {
    const state = this.#state[direction];
    if (state.blackhole) return;
    if (direction === 'down' && link.cutOnReply) {
      this.cuts++;
      this.#close(link);
      return;
    }
    if (direction === 'up' && this.#cutOn && chunk.includes(this.#cutOn.pattern)) {
      const { afterReply, before } = this.#cutOn;
      this.#cutOn.left--;
      if (this.#cutOn.left <= 0) this.#cutOn = undefined;
      if (before) {
        this.#refusing = true;
        this.cuts++;
        this.#close(link);
        return;
      }
      if (afterReply) {
        link.cutOnReply = true;
        link.server.write(chunk);
        return;
      }
      // The request reaches the server; the connection dies before the reply does.
      link.server.write(chunk, () => {
        this.cuts++;
        this.#close(link);
      });
      return;
    }
    link.held[direction].push(chunk);
    if (!state.paused) this.#flush(link, direction);
  }

  #flush(link: Link, direction: Direction): void {
    const state = this.#state[direction];
    const target = direction === 'up' ? link.server : link.client;
    const chunks = link.held[direction].splice(0);
    for (const chunk of chunks) {
      if (state.delayMs <= 0 && state.jitterMs <= 0 && link.due[direction] <= performance.now()) {
        if (!target.destroyed) target.write(chunk);
        continue;
      }
      const jitter = state.jitterMs > 0 ? (this.#random() * 2 - 1) * state.jitterMs : 0;
      const due = Math.max(link.due[direction], performance.now() + Math.max(0, state.delayMs + jitter));
      link.due[direction] = due;
      setTimeout(() => {
        if (!target.destroyed && this.#links.has(link)) target.write(chunk);
      }, due - performance.now());
    }
  }

  #close(link: Link): void {
    if (!this.#links.delete(link)) return;
    link.client.destroy();
    link.server.destroy();
  }
}
