/**
 * A TCP proxy for fault injection between a client and a server: forwards both ways until told to blackhole
 * (keep the sockets, drop the bytes: the client sees silence, not an error), cut every connection, or cut the
 * connection right after forwarding a client chunk that contains a pattern (the request reaches the server, its
 * reply is lost).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { freePort } from './redis-server.js';

export class TcpProxy {
  #server: Server;
  #pairs = new Set<[Socket, Socket]>();
  #blackholed = false;
  #cutOn: { pattern: Buffer; resolve: () => void } | undefined;

  private constructor(
    readonly port: number,
    readonly targetPort: number,
  ) {
    this.#server = createServer((client) => this.#accept(client));
  }

  /** Starts a proxy on a free loopback port forwarding to `targetPort`. */
  static async start(targetPort: number): Promise<TcpProxy> {
    const proxy = new TcpProxy(await freePort(), targetPort);
    await new Promise<void>((resolve) => proxy.#server.listen(proxy.port, '127.0.0.1', resolve));
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  #accept(client: Socket): void {
    const server = connect(this.targetPort, '127.0.0.1');
    const pair: [Socket, Socket] = [client, server];
    this.#pairs.add(pair);
    const close = (): void => {
      client.destroy();
      server.destroy();
      this.#pairs.delete(pair);
    };
    client.on('data', (chunk: Buffer) => {
      if (this.#blackholed) return;
      server.write(chunk);
      const cut = this.#cutOn;
      if (cut && chunk.includes(cut.pattern)) {
        this.#cutOn = undefined;
        // Let the request reach the server, then drop the connection before the reply comes back.
        client.pause();
        server.pause();
        server.removeAllListeners('data');
        setTimeout(() => {
          close();
          cut.resolve();
        }, 50);
      }
    });
    server.on('data', (chunk: Buffer) => {
      if (!this.#blackholed) client.write(chunk);
    });
    client.on('error', close);
    server.on('error', close);
    client.on('close', close);
    server.on('close', close);
  }

  /** Drops every byte both ways (sockets stay open) until `heal()`. New connections are accepted but silent. */
  blackhole(): void {
    this.#blackholed = true;
  }
  heal(): void {
    this.#blackholed = false;
  }

  /** Closes every proxied connection now. */
  cutAll(): void {
    for (const [a, b] of this.#pairs) {
      a.destroy();
      b.destroy();
    }
    this.#pairs.clear();
  }

  /** Resolves once a client chunk containing `pattern` was forwarded and its connection cut (reply lost). */
  cutAfterRequestContaining(pattern: string | Buffer): Promise<void> {
    return new Promise((resolve) => {
      this.#cutOn = { pattern: Buffer.isBuffer(pattern) ? pattern : Buffer.from(pattern), resolve };
    });
  }

  async stop(): Promise<void> {
    this.cutAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
