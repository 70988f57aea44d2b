/**
 * `holdfast dashboard`: a live web page of the locks under a prefix. Each lock with its holder's fingerprint, hold
 * count, fencing token and remaining lease (a shrinking bar); a fair lock's queue; a read-write lock's writer and
 * readers; an expirable semaphore's permits and their leases; a counting semaphore's free permits; latch counts.
 * Pushed to the page with server-sent events, searchable there.
 *
 * Safety: read-only unless started with `--allow-unlock` (then force-unlock, behind a confirmation, for locks and
 * fair locks). Binds 127.0.0.1 unless told otherwise, and any other address needs `--token`. The page never shows an
 * owner id, a permit id (both release capabilities: it shows their fingerprints) or a password. Keys are walked with
 * SCAN and a cap. Values come from the primitives' own `inspect()` where they have one; the rest (a read-write lock's
 * readers, an expirable semaphore's leases) is read with plain read commands, never a script that writes.
 *
 * @module
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { fingerprint, Holdfast } from '../index.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, EXIT, durationOption, out, parse, UsageError } from './common.js';
import { connect } from './connect.js';
import { DASHBOARD_CSS, DASHBOARD_HTML, DASHBOARD_JS } from './dashboard-page.js';
import { globEscape } from './inspect.js';

/** A lease as the page shows it: a holder (fingerprint), its hold count and the ms left. */
export interface LeaseView {
  holder: string;
  holdCount: number;
  remainingTtl: number | null;
}

/** One entry of the dashboard (the `/api/snapshot` JSON shape). */
export type DashboardEntry =
  | { kind: 'lock'; name: string; holder: string | null; holdCount: number; token: number; remainingTtl: number | null; lastToken: number }
  | {
      kind: 'fair-lock';
      name: string;
      holder: string | null;
      holdCount: number;
      token: number;
      remainingTtl: number | null;
      lastToken: number;
      queueLength: number;
      /** Fingerprints of the live waiters, head first. */
      queue: string[];
    }
  | {
      kind: 'read-write-lock';
      name: string;
      writer: LeaseView | null;
      token: number;
      readers: LeaseView[];
      waitingWriters: number;
      lastToken: number;
    }
  | { kind: 'semaphore'; name: string; available: number }
  | { kind: 'permit-semaphore'; name: string; available: number; acquired: number; leases: (LeaseView & { permits: number })[] }
  | { kind: 'latch'; name: string; count: number; remainingTtl: number | null };

/** What the page gets on every update. */
export interface DashboardSnapshot {
  /** Wall-clock time of the reading (ms since the epoch). */
  at: number;
  prefix: string;
  /** Keys looked at by SCAN. */
  scanned: number;
  /** True when the SCAN stopped at `--max-keys`: some locks may be missing. */
  truncated: boolean;
  /** Whether the page may offer force-unlock. */
  allowUnlock: boolean;
  entries: DashboardEntry[];
  /** Set when the last reading failed (e.g. Redis unreachable); `entries` then is the last good reading's. */
  error?: string;
}

type EntryKind = DashboardEntry['kind'];

/** The key suffix after `{name}:` → which primitive it belongs to (see src/keys.ts). */
const SUFFIXES: Record<string, EntryKind> = {
  lock: 'lock',
  fair: 'fair-lock',
  'fair:q': 'fair-lock',
  'rw:w': 'read-write-lock',
  'rw:r': 'read-write-lock',
  'rw:ww': 'read-write-lock',
  sem: 'semaphore',
  psem: 'permit-semaphore',
  'psem:l': 'permit-semaphore',
  latch: 'latch',
};

/** The order the kinds are listed in. */
const ORDER: EntryKind[] = ['lock', 'fair-lock', 'read-write-lock', 'permit-semaphore', 'semaphore', 'latch'];

/** What a reading needs. */
export interface ReadOptions {
  /** Redis glob on the lock name. @default '*' */
  match?: string;
  /** Most keys SCAN looks at. @default 10000 */
  maxKeys?: number;
}

/** Finds the primitives under the client's prefix with SCAN (at most `maxKeys` keys) and reads each one. */
export async function readDashboard(holdfast: Holdfast, options: ReadOptions = {}): Promise<Omit<DashboardSnapshot, 'allowUnlock'>> {
  const keys = holdfast.core.keys;
  const maxKeys = options.maxKeys ?? 10_000;
  const pattern = `${globEscape(keys.prefix)}{${options.match ?? '*'}}:*`;
  const found = new Map<EntryKind, Set<string>>();
  let scanned = 0;
  let cursor = '0';
  let truncated = false;
  do {
    const [next, batch] = (await holdfast.core.command(['SCAN', cursor, 'MATCH', pattern, 'COUNT', String(Math.min(500, maxKeys))])) as [string, string[]];
    cursor = String(next);
    for (const key of batch) {
      if (scanned >= maxKeys) {
        truncated = true;
        break;
      }
      scanned++;
      const name = keys.nameOf(key);
      if (name === undefined) continue;
      const kind = SUFFIXES[key.slice(keys.base(name).length + 1)];
      if (kind === undefined) continue;
      let names = found.get(kind);
      if (!names) found.set(kind, (names = new Set()));
      names.add(name);
    }
    if (scanned >= maxKeys && cursor !== '0') truncated = true; // the cap, with keys left to look at
  } while (cursor !== '0' && !truncated);
  const entries: DashboardEntry[] = [];
  for (const kind of ORDER) {
    const names = [...(found.get(kind) ?? [])].sort();
    // a few at a time: a dashboard must not flood the server it watches
    for (let i = 0; i < names.length; i += 16) {
      const read = await Promise.all(names.slice(i, i + 16).map((name) => readOne(holdfast, kind, name)));
      for (const entry of read) if (entry) entries.push(entry);
    }
  }
  return { at: Date.now(), prefix: keys.prefix, scanned, truncated, entries };
}

const fp = (owner: string | null): string | null => (owner === null ? null : fingerprint(owner));

/** Reads one primitive; `undefined` when there is nothing to show any more (released since the SCAN). */
async function readOne(holdfast: Holdfast, kind: EntryKind, name: string): Promise<DashboardEntry | undefined> {
  const core = holdfast.core;
  const k = core.keys;
  switch (kind) {
    case 'lock': {
      const info = await holdfast.lock(name).inspect();
      if (info.owner === null) return undefined;
      return { kind, name, holder: fp(info.owner), holdCount: info.holdCount, token: info.token, remainingTtl: info.remainingTtl, lastToken: info.lastToken };
    }
    case 'fair-lock': {
      const info = await holdfast.fairLock(name).inspect();
      if (info.owner === null && info.queueLength === 0) return undefined;
      return {
        kind,
        name,
        holder: fp(info.owner),
        holdCount: info.holdCount,
        token: info.token,
        remainingTtl: info.remainingTtl,
        lastToken: info.lastToken,
        queueLength: info.queueLength,
        queue: info.waiters.map((w) => fingerprint(w)),
      };
    }
    case 'read-write-lock': {
      const info = await holdfast.readWriteLock(name).inspect();
      const [readers, counts, time] = await Promise.all([
        core.command(['ZRANGE', k.rwReaders(name), '0', '-1', 'WITHSCORES'], k.rwReaders(name)),
        core.command(['HGETALL', k.rwReadCounts(name)], k.rwReadCounts(name)),
        core.command(['TIME']),
      ]);
      const nowMs = redisMs(time);
      const holdCounts = hashOf(counts);
      const readerViews = pairsOf(readers)
        .map(([owner, expiry]) => ({ holder: fingerprint(owner), holdCount: Number(holdCounts.get(owner) ?? 1), remainingTtl: Math.max(0, Math.round(Number(expiry) - nowMs)) }))
        .filter((r) => r.remainingTtl > 0);
      if (info.writer === null && readerViews.length === 0 && info.waitingWriters === 0) return undefined;
      return {
        kind,
        name,
        writer: info.writer === null ? null : { holder: fingerprint(info.writer), holdCount: info.writeHoldCount, remainingTtl: info.remainingTtl },
        token: info.token,
        readers: readerViews,
        waitingWriters: info.waitingWriters,
        lastToken: info.lastToken,
      };
    }
    case 'semaphore':
      return { kind, name, available: await holdfast.semaphore(name).availablePermits() };
    case 'permit-semaphore': {
      const [free, leases, weights, time] = await Promise.all([
        core.command(['GET', k.permits(name)], k.permits(name)),
        core.command(['ZRANGE', k.permitLeases(name), '0', '-1', 'WITHSCORES'], k.permitLeases(name)),
        core.command(['HGETALL', k.permitWeights(name)], k.permitWeights(name)),
        core.command(['TIME']),
      ]);
      const nowMs = redisMs(time);
      const permitsOf = hashOf(weights);
      // expired leases are counted back as free (what the next operation's reclaim does), without writing
      let available = Number(free ?? 0);
      const live: (LeaseView & { permits: number })[] = [];
      for (const [id, expiry] of pairsOf(leases)) {
        const permits = Number(permitsOf.get(id) ?? 1);
        const left = Math.round(Number(expiry) - nowMs);
        if (left > 0) live.push({ holder: fingerprint(id), holdCount: 1, permits, remainingTtl: left });
        else available += permits;
      }
      return { kind, name, available, acquired: live.reduce((n, l) => n + l.permits, 0), leases: live };
    }
    case 'latch': {
      const [count, pttl] = (await Promise.all([core.command(['GET', k.latch(name)], k.latch(name)), core.command(['PTTL', k.latch(name)], k.latch(name))])) as [
        string | null,
        number,
      ];
      if (Number(count) <= 0) return undefined;
      return { kind, name, count: Number(count), remainingTtl: Number(pttl) >= 0 ? Number(pttl) : null };
    }
  }
}

/** `TIME` → ms. */
function redisMs(reply: unknown): number {
  const [s, us] = reply as [string, string];
  return Number(s) * 1000 + Number(us) / 1000;
}
/** A `[a, 1, b, 2]` or `[[a, 1], [b, 2]]` reply → pairs. */
function pairsOf(reply: unknown): [string, string][] {
  if (!Array.isArray(reply)) return [];
  if (reply.every((item) => Array.isArray(item))) return (reply as unknown[][]).map(([a, b]) => [String(a), String(b)]);
  const pairs: [string, string][] = [];
  for (let i = 0; i + 1 < reply.length; i += 2) pairs.push([String(reply[i]), String(reply[i + 1])]);
  return pairs;
}
function hashOf(reply: unknown): Map<string, string> {
  if (Array.isArray(reply)) return new Map(pairsOf(reply));
  if (reply && typeof reply === 'object') return new Map(Object.entries(reply as Record<string, unknown>).map(([a, b]) => [a, String(b)]));
  return new Map();
}

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  host: { type: 'string' },
  port: { type: 'string' },
  token: { type: 'string' },
  'allow-unlock': { type: 'boolean' },
  interval: { type: 'string' },
  match: { type: 'string' },
  'max-keys': { type: 'string' },
} as const;

export const DASHBOARD_HELP = `Usage: holdfast dashboard [options]

A live web page of the locks under a prefix: holders (by fingerprint, never their owner ids), hold counts,
fencing tokens, remaining leases, fair-lock queues, read-write lock readers and writer, semaphore permits and
their leases, latch counts. Updated live, searchable. Prints its URL on the first line; stop it with Ctrl-C.
Read-only unless --allow-unlock.

Options:
  --host <addr>        address to listen on (default: 127.0.0.1); any other needs --token
  --port <n>           port (default: 7420; 0 picks a free one)
  --token <secret>     required in the URL (?token=…) for every request (default: $HOLDFAST_DASHBOARD_TOKEN)
  --allow-unlock       offer force-unlock of locks and fair locks (each behind a confirmation)
  --interval <ms>      refresh period (default: 1000)
  --match <glob>       only lock names matching this Redis glob (e.g. 'orders:*')
  --max-keys <n>       stop the SCAN after this many keys (default: 10000)
${CONNECTION_HELP}

Examples:
  holdfast dashboard
  holdfast dashboard --prefix billing: --match 'invoice:*'
  holdfast dashboard --host 0.0.0.0 --token "$(openssl rand -hex 16)" --allow-unlock`;

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

/** `holdfast dashboard`. */
export async function dashboardCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parse(argv, OPTIONS, 'dashboard');
  if (values.help) {
    out(DASHBOARD_HELP);
    return EXIT.OK;
  }
  if (positionals.length > 0) throw new UsageError(`dashboard takes no lock name (use --match '${positionals[0]}')`, 'dashboard');
  const host = values.host ?? '127.0.0.1';
  const port = values.port === undefined ? 7420 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port must be 0–65535, got "${values.port}"`, 'dashboard');
  const token = values.token ?? (process.env.HOLDFAST_DASHBOARD_TOKEN || undefined);
  if (!LOOPBACK.has(host) && token === undefined) {
    throw new UsageError(`--host ${host} lets others reach the dashboard: give a --token (or $HOLDFAST_DASHBOARD_TOKEN)`, 'dashboard');
  }
  const interval = durationOption(values.interval, 'interval', 'dashboard', 100) ?? 1000;
  const maxKeys = values['max-keys'] === undefined ? 10_000 : Number(values['max-keys']);
  if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) throw new UsageError(`--max-keys must be a whole number ≥ 1, got "${values['max-keys']}"`, 'dashboard');
  const allowUnlock = values['allow-unlock'] === true;

  const connection = await connect({ url: values.url, connectTimeout: durationOption(values['connect-timeout'], 'connect-timeout', 'dashboard', 1) ?? 3000 });
  const holdfast = new Holdfast({ redis: connection.client, ...(values.prefix === undefined ? {} : { prefix: values.prefix }) });
  const readOptions: ReadOptions = { maxKeys, ...(values.match === undefined ? {} : { match: values.match }) };
  const dashboard = new Dashboard(holdfast, readOptions, interval, allowUnlock, token);
  try {
    const address = await dashboard.listen(host, port);
    out(address + (token === undefined ? '' : `?token=${encodeURIComponent(token)}`));
    out(`watching ${connection.where}, prefix "${holdfast.core.keys.prefix}"${allowUnlock ? ', force-unlock allowed' : ', read-only'}; Ctrl-C stops`);
    await new Promise<void>((resolve) => {
      process.once('SIGINT', resolve);
      process.once('SIGTERM', resolve);
    });
    return EXIT.OK;
  } finally {
    await dashboard.close();
    await holdfast.close().catch(() => {});
    await connection.close();
  }
}

/** The dashboard's web server: the page, its script and style, the event stream, a snapshot and force-unlock. */
export class Dashboard {
  readonly #server = createServer((req, res) => void this.#handle(req, res));
  readonly #streams = new Set<ServerResponse>();
  #timer: NodeJS.Timeout | undefined;
  #last: DashboardSnapshot | undefined;
  #reading: Promise<DashboardSnapshot> | undefined;
  /** Host headers accepted (the address the server listens on, and localhost for a loopback one): no DNS rebinding. */
  #hosts = new Set<string>();

  constructor(
    readonly holdfast: Holdfast,
    readonly options: ReadOptions,
    readonly interval: number,
    readonly allowUnlock: boolean,
    readonly token: string | undefined,
  ) {}

  /** Starts listening; resolves the page's URL. */
  async listen(host: string, port: number): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, host, () => resolve());
    });
    const bound = (this.#server.address() as { port: number }).port;
    const shown = isIP(host) === 6 ? `[${host}]` : host;
    this.#hosts.add(`${shown}:${bound}`);
    if (LOOPBACK.has(host)) for (const h of ['127.0.0.1', 'localhost', '[::1]']) this.#hosts.add(`${h}:${bound}`);
    return `http://${shown}:${bound}/`;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    for (const res of this.#streams) res.end();
    this.#streams.clear();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** One reading at a time, shared by every stream and snapshot request. */
  read(): Promise<DashboardSnapshot> {
    this.#reading ??= readDashboard(this.holdfast, this.options)
      .then((s): DashboardSnapshot => ({ ...s, allowUnlock: this.allowUnlock }))
      .catch((error: unknown): DashboardSnapshot => ({
        ...(this.#last ?? { at: Date.now(), prefix: this.holdfast.core.keys.prefix, scanned: 0, truncated: false, entries: [] }),
        allowUnlock: this.allowUnlock,
        error: error instanceof Error ? error.message : String(error),
      }))
      .then((s) => {
        if (s.error === undefined) this.#last = s;
        return s;
      })
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      res.setHeader('X-Content-Type-Options', 'nosniff');
      res.setHeader('Referrer-Policy', 'no-referrer');
      res.setHeader('X-Frame-Options', 'DENY');
      res.setHeader('Cache-Control', 'no-store');
      if (!this.#hosts.has(req.headers.host ?? '')) return send(res, 421, 'text/plain', 'unknown host\n');
      const url = new URL(req.url ?? '/', 'http://dashboard');
      if (this.token !== undefined && !sameSecret(url.searchParams.get('token') ?? req.headers['x-holdfast-token'], this.token)) {
        return send(res, 401, 'text/plain', 'a token is required: open the URL the dashboard printed\n');
      }
      const route = `${req.method ?? 'GET'} ${url.pathname}`;
      switch (route) {
        case 'GET /':
          res.setHeader('Content-Security-Policy', `default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'`);
          return send(res, 200, 'text/html; charset=utf-8', DASHBOARD_HTML);
        case 'GET /app.js':
          return send(res, 200, 'text/javascript; charset=utf-8', DASHBOARD_JS);
        case 'GET /app.css':
          return send(res, 200, 'text/css; charset=utf-8', DASHBOARD_CSS);
        case 'GET /api/snapshot':
          return send(res, 200, 'application/json', JSON.stringify(await this.read()));
        case 'GET /events':
          return this.#stream(res);
        case 'POST /api/unlock':
          return await this.#unlock(req, res);
        default:
          return send(res, 404, 'text/plain', 'not found\n');
      }
    } catch (error) {
      if (!res.headersSent) send(res, 500, 'text/plain', `${error instanceof Error ? error.message : String(error)}\n`);
      else res.end();
    }
  }

  #stream(res: ServerResponse): void {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', Connection: 'keep-alive' });
    res.write(`retry: ${Math.max(1000, this.interval)}\n\n`);
    this.#streams.add(res);
    res.on('close', () => {
      this.#streams.delete(res);
      if (this.#streams.size === 0) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    });
    void this.#push();
    // poll only while someone watches
    this.#timer ??= setInterval(() => void this.#push(), this.interval);
  }

  async #push(): Promise<void> {
    const snapshot = await this.read();
    const data = `data: ${JSON.stringify(snapshot)}\n\n`;
    for (const res of this.#streams) res.write(data);
  }

  async #unlock(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!this.allowUnlock) return send(res, 403, 'text/plain', 'read-only: start the dashboard with --allow-unlock\n');
    // a custom header: a cross-site form or image cannot send it, and a script must first pass a CORS preflight (never answered)
    if (req.headers['x-holdfast-dashboard'] !== 'unlock') return send(res, 400, 'text/plain', 'missing X-Holdfast-Dashboard: unlock\n');
    const origin = req.headers.origin;
    if (origin !== undefined && !this.#hosts.has(origin.replace(/^https?:\/\//, ''))) return send(res, 403, 'text/plain', 'cross-origin request refused\n');
    const body = await readBody(req, 4096);
    let request: { kind?: unknown; name?: unknown };
    try {
      request = JSON.parse(body) as { kind?: unknown; name?: unknown };
    } catch {
      return send(res, 400, 'text/plain', 'the body must be JSON {"kind", "name"}\n');
    }
    const { kind, name } = request;
    if (typeof name !== 'string' || name === '') return send(res, 400, 'text/plain', 'name must be a lock name\n');
    let unlocked: boolean;
    if (kind === 'lock') unlocked = await this.holdfast.lock(name).forceUnlock();
    else if (kind === 'fair-lock') unlocked = await this.holdfast.fairLock(name).forceUnlock();
    else return send(res, 400, 'text/plain', 'force-unlock is offered for kind "lock" and "fair-lock"\n');
    send(res, 200, 'application/json', JSON.stringify({ kind, name, unlocked }));
    void this.#push();
  }
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

function sameSecret(given: string | string[] | null | undefined, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      body += chunk;
      if (body.length > limit) {
        reject(new Error('request body too large'));
        req.destroy();
      }
    });
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}
