/**
 * A memory store served over RESP on a loopback port: other processes of this machine (the demo's workers, a
 * `redis-cli`) reach the store with any Redis client. It serves the commands of the memory backend (commands.ts),
 * scripts, pub/sub, RESP2 and RESP3 (`HELLO 3`). It is a convenience for demos and tools, not a Redis server: no
 * persistence, no replication, no authentication.
 *
 * @module
 */
import { createServer, type Server, type Socket } from 'node:net';
import { runCommand, Status, type Reply } from './commands.js';
import { Keyspace, MemoryReplyError, type ChannelListener, type MemoryStore } from './keyspace.js';
import { ensureVm } from './lua.js';
import { evalCommand, scriptCommand } from './transport.js';

/** A running RESP endpoint of a store. */
export interface MemoryServer {
  /** `redis://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** Stops listening and closes every connection (the store stays open). */
  close(): Promise<void>;
}

/** Options of {@link serveMemoryStore}. */
export interface ServeOptions {
  /**
   * The port on 127.0.0.1.
   * @default 0 (a free port)
   */
  port?: number;
}

class Encoder {
  constructor(public resp: 2 | 3) {}

  encode(reply: Reply | Map<string, Reply>, push = false): string {
    if (reply === null) return this.resp === 3 ? '_\r\n' : '$-1\r\n';
    if (typeof reply === 'number') return `:${reply}\r\n`;
    if (typeof reply === 'string') return `$${Buffer.byteLength(reply)}\r\n${reply}\r\n`;
    if (reply instanceof Status) return `+${reply.status}\r\n`;
    if (reply instanceof Map) {
      let out = this.resp === 3 ? `%${reply.size}\r\n` : `*${reply.size * 2}\r\n`;
      for (const [k, v] of reply) out += this.encode(k) + this.encode(v);
      return out;
    }
    let out = `${push && this.resp === 3 ? '>' : '*'}${reply.length}\r\n`;
    for (const r of reply) out += this.encode(r);
    return out;
  }

  error(message: string): string {
    return `-${message.replace(/[\r\n]+/g, ' ')}\r\n`;
  }
}

/** An inline command's arguments, split as Redis splits them: by spaces, with "double" (escapes) and 'single' quotes. */
function splitInline(line: string): string[] {
  const args: string[] = [];
  let i = 0;
  while (i < line.length) {
    while (i < line.length && /\s/.test(line[i]!)) i++;
    if (i >= line.length) break;
    let arg = '';
    const quote = line[i] === '"' || line[i] === "'" ? line[i++] : undefined;
    while (i < line.length) {
      const c = line[i]!;
      if (quote === undefined && /\s/.test(c)) break;
      if (c === quote) {
        i++;
        break;
      }
      if (c === '\\' && quote !== undefined && i + 1 < line.length) {
        const n = line[++i]!;
        arg += quote === '"' ? ({ n: '\n', r: '\r', t: '\t', b: '\b', a: '\x07' } as Record<string, string>)[n] ?? n : n === "'" ? "'" : '\\' + n;
      } else arg += c;
      i++;
    }
    args.push(arg);
  }
  return args;
}

/** Reads RESP requests (arrays of bulk strings, or inline commands) from a byte stream. */
class Parser {
  #buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): void {
    this.#buf = this.#buf.length === 0 ? chunk : Buffer.concat([this.#buf, chunk]);
  }

  /** The next complete request, or undefined when more bytes are needed. */
  next(): string[] | undefined {
    const buf = this.#buf;
    if (buf.length === 0) return undefined;
    const eol = buf.indexOf('\r\n');
    if (eol < 0) return undefined;
    if (buf[0] !== 0x2a /* '*' */) {
      this.#buf = buf.subarray(eol + 2);
      return splitInline(buf.subarray(0, eol).toString());
    }
    const count = Number(buf.subarray(1, eol).toString());
    let at = eol + 2;
    const args: string[] = [];
    for (let i = 0; i < count; i++) {
      const e = buf.indexOf('\r\n', at);
      if (e < 0) return undefined;
      if (buf[at] !== 0x24 /* '$' */) throw new MemoryReplyError("ERR Protocol error: expected '$'");
      const len = Number(buf.subarray(at + 1, e).toString());
      const start = e + 2;
      if (buf.length < start + len + 2) return undefined;
      args.push(buf.subarray(start, start + len).toString());
      at = start + len + 2;
    }
    this.#buf = buf.subarray(at);
    return args;
  }
}

/**
 * Serves `store` over RESP on 127.0.0.1 (see the module notes): for processes of this machine that need the same
 * store, e.g. worker processes of a demo. Nothing is kept alive by it once `close()` ran.
 */
export async function serveMemoryStore(memory: MemoryStore, options: ServeOptions = {}): Promise<MemoryServer> {
  if (!(memory instanceof Keyspace)) throw new TypeError('serveMemoryStore(store): store must be a store made by memoryStore()');
  const store: Keyspace = memory;
  await ensureVm(store);
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.setNoDelay(true);
    const parser = new Parser();
    const enc = new Encoder(2);
    const channels = new Map<string, boolean>();
    const listener: ChannelListener = {
      deliver(channel, message) {
        const sharded = channels.get(channel);
        if (sharded === undefined || socket.destroyed) return;
        socket.write(enc.encode([sharded ? 'smessage' : 'message', channel, message], true));
      },
    };
    let queue = Promise.resolve();
    const closeAll = (): void => {
      sockets.delete(socket);
      for (const [c, sharded] of channels) store.unlisten(c, sharded, listener);
      channels.clear();
    };
    socket.on('close', closeAll);
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk) => {
      parser.push(chunk);
      for (;;) {
        let args: string[] | undefined;
        try {
          args = parser.next();
        } catch (error) {
          socket.end(enc.error((error as Error).message));
          return;
        }
        if (!args) return;
        if (args.length === 0) continue;
        const request = args;
        queue = queue.then(async () => {
          if (socket.destroyed) return;
          socket.write(await answer(request));
        });
      }
    });

    const subscribe = (args: readonly string[], sharded: boolean, on: boolean): string => {
      let out = '';
      const kind = (sharded ? 's' : '') + (on ? 'subscribe' : 'unsubscribe');
      const names = args.length > 0 ? args : [...channels.keys()];
      for (const c of names) {
        if (on) {
          channels.set(c, sharded);
          store.listen(c, sharded, listener);
        } else {
          channels.delete(c);
          store.unlisten(c, sharded, listener);
        }
        out += enc.encode([kind, c, channels.size], true);
      }
      if (names.length === 0) out += enc.encode([kind, null, 0], true);
      return out;
    };

    const answer = async (args: string[]): Promise<string> => {
      const name = args[0]!.toLowerCase();
      try {
        if (store.closed) return enc.error('ERR the store is closed');
        switch (name) {
          case 'hello': {
            const proto = args[1] === undefined ? enc.resp : Number(args[1]);
            if (proto !== 2 && proto !== 3) return enc.error('NOPROTO unsupported protocol version');
            enc.resp = proto;
            return enc.encode(
              new Map<string, Reply>([
                ['server', 'redis'],
                ['version', '7.2.0'],
                ['proto', proto],
                ['id', 1],
                ['mode', 'standalone'],
                ['role', 'master'],
                ['modules', []],
              ]),
            );
          }
          case 'client':
          case 'select':
          case 'auth':
          case 'readonly':
          case 'readwrite':
            return enc.encode(new Status('OK'));
          case 'quit':
            setImmediate(() => socket.end());
            return enc.encode(new Status('OK'));
          case 'command':
            return enc.encode([]);
          case 'subscribe':
          case 'ssubscribe':
          case 'unsubscribe':
          case 'sunsubscribe':
            return subscribe(args.slice(1), name.startsWith('s') && name !== 'subscribe', !name.includes('unsub'));
          case 'script':
            return enc.encode(scriptCommand(store, args.slice(1)));
          case 'eval':
          case 'evalsha':
            return enc.encode(evalCommand(store, args));
          case 'wait': {
            const reply = runCommand(store, args);
            if (Number(args[1]) > 0) await new Promise((r) => setTimeout(r, Number(args[2]) || 2 ** 31 - 1));
            return enc.encode(reply);
          }
          default:
            if (channels.size > 0 && name === 'ping') return enc.encode(['pong', args[1] ?? ''], true);
            return enc.encode(runCommand(store, args));
        }
      } catch (error) {
        return enc.error(error instanceof MemoryReplyError ? error.message : `ERR ${(error as Error).message}`);
      }
    };
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
