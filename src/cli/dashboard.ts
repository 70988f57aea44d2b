/**
 * `holdfast dashboard`: a live web page of everything held under a prefix, one card per primitive of every kind of
 * the registry (src/kinds.ts): its holders by fingerprint and label (never an owner id), hold counts, fencing tokens,
 * remaining leases (a shrinking bar) and how long they have held it; a lock's waiters, a fair lock's queue, a
 * read-write lock's writer and readers, an expirable semaphore's permits and their leases, a counting semaphore's
 * free permits, latch counts, run-once jobs. Pushed to the page with server-sent events, searchable there.
 *
 * Safety: read-only unless started with `--allow-unlock` (then force-unlock, behind a confirmation, of every kind the
 * registry can force free). Binds 127.0.0.1 unless told otherwise, and any other address needs `--token`. The page
 * never shows an owner id, a permit id (both release capabilities: it shows their fingerprints) or a password. Keys
 * are walked with SCAN and a cap; each primitive is read by its registry entry, with scripts that only read.
 *
 * @module
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { Holdfast, STORED_KINDS, type JobInfo, type KindName, type KindState } from '../index.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, EXIT, durationOption, out, parse, UsageError } from './common.js';
import { connect } from './connect.js';
import { DASHBOARD_CSS, DASHBOARD_HTML, DASHBOARD_JS } from './dashboard-page.js';
import { globEscape, kindOfKey } from './inspect.js';

/** A holder as the page shows it: its fingerprint and label, never its owner id. */
export interface HolderView {
  /** The owner's (or permit's) fingerprint. */
  holder: string;
  /** Its client's label (the `label` client option), when it set one. */
  label: string | null;
  /** `read` / `write` on a read-write lock. */
  side?: 'read' | 'write';
  holdCount: number;
  remainingTtl: number | null;
  token?: number;
  permits?: number;
  /** ms since the dashboard first saw this hold (this token, this holder). */
  heldForMs: number;
  /** True when the hold was there at the dashboard's first reading: it has been held at least `heldForMs`. */
  heldForAtLeast: boolean;
}

/** A waiter as the page shows it. */
export interface WaiterView {
  /** Its owner's fingerprint. */
  holder: string;
  label: string | null;
  /** ms it has waited (a plain lock's waiters). */
  waitedMs?: number;
}

/** One entry of the dashboard (the `/api/snapshot` JSON shape): one primitive of a registry kind. */
export interface DashboardEntry {
  kind: KindName;
  name: string;
  /** Held (a latch: closed; a job: claimed). */
  held: boolean;
  holders: HolderView[];
  /** The exclusive holder's fencing token, 0 when none. */
  token: number;
  /** The last token minted for the name, `null` for kinds that mint none. */
  lastToken: number | null;
  /** ms left on the exclusive holder's lease (or a latch's TTL, a job's lock). */
  remainingTtl: number | null;
  /** How many wait, `null` where Redis keeps no count. */
  waiters: number | null;
  /** The waiters Redis names, head (or longest waiting) first. */
  queue: WaiterView[];
  available?: number;
  acquired?: number;
  count?: number;
  /** A run-once job's record (instances by fingerprint and label, never an owner id). */
  job?: JobInfo & { runningOnLabel: string | null; lastRunByLabel: string | null };
}

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
  /** The kinds the page may force free (when `allowUnlock`). */
  forceable: KindName[];
  entries: DashboardEntry[];
  /** Set when the last reading failed (e.g. Redis unreachable); `entries` then is the last good reading's (empty when none). */
  error?: string;
}

/** What a reading needs. */
export interface ReadOptions {
  /** Redis glob on the lock name. @default '*' */
  match?: string;
  /** Most keys SCAN looks at. @default 10000 */
  maxKeys?: number;
}

/** A reading before the dashboard adds what it remembers (held-for times). */
export type Reading = Omit<DashboardSnapshot, 'allowUnlock' | 'forceable' | 'entries'> & { states: KindState[] };

/** Finds the primitives under the client's prefix with SCAN (at most `maxKeys` keys) and reads each one. */
export async function readDashboard(holdfast: Holdfast, options: ReadOptions = {}): Promise<Reading> {
  const keys = holdfast.core.keys;
  const maxKeys = options.maxKeys ?? 10_000;
  const pattern = `${globEscape(keys.prefix)}{${options.match ?? '*'}}:*`;
  const found = new Map<KindName, Set<string>>();
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
      const hit = kindOfKey(holdfast, key);
      if (!hit) continue;
      let names = found.get(hit.entry.kind);
      if (!names) found.set(hit.entry.kind, (names = new Set()));
      names.add(hit.name);
    }
    if (scanned >= maxKeys && cursor !== '0') truncated = true; // the cap, with keys left to look at
  } while (cursor !== '0' && !truncated);
  const states: KindState[] = [];
  for (const { kind, store } of STORED_KINDS) {
    const names = [...(found.get(kind) ?? [])].sort();
    // a few at a time: a dashboard must not flood the server it watches
    for (let i = 0; i < names.length; i += 16) {
      const read = await Promise.all(names.slice(i, i + 16).map((name) => store.read(holdfast, name)));
      for (const state of read) if (state) states.push(state);
    }
  }
  return { at: Date.now(), prefix: keys.prefix, scanned, truncated, states };
}

/** Remembers when each hold was first seen (by kind, name, holder and token), for the held-for times. */
export class HoldClock {
  readonly #since = new Map<string, { at: number; atLeast: boolean }>();
  #readings = 0;

  /** The page's entries of a reading taken at `at`; holds no longer there are forgotten. */
  entries(states: readonly KindState[], at: number): DashboardEntry[] {
    const first = this.#readings++ === 0;
    const live = new Set<string>();
    const entries = states.map((state): DashboardEntry => {
      const holders = state.holders.map((h): HolderView => {
        const id = `${state.kind}\0${state.name}\0${h.fingerprint}\0${h.token ?? 0}`;
        live.add(id);
        let since = this.#since.get(id);
        if (!since) this.#since.set(id, (since = { at, atLeast: first }));
        return {
          holder: h.fingerprint,
          label: h.label,
          ...(h.side === undefined ? {} : { side: h.side }),
          holdCount: h.holdCount,
          remainingTtl: h.remainingTtl,
          ...(h.token === undefined ? {} : { token: h.token }),
          ...(h.permits === undefined ? {} : { permits: h.permits }),
          heldForMs: at - since.at,
          heldForAtLeast: since.atLeast,
        };
      });
      return {
        kind: state.kind,
        name: state.name,
        held: state.held,
        holders,
        token: state.token,
        lastToken: state.lastToken,
        remainingTtl: state.remainingTtl,
        waiters: state.waiters,
        queue: state.queue.map((w) => ({ holder: w.fingerprint, label: w.label, ...(w.waitedMs === undefined ? {} : { waitedMs: w.waitedMs }) })),
        ...(state.available === undefined ? {} : { available: state.available }),
        ...(state.acquired === undefined ? {} : { acquired: state.acquired }),
        ...(state.count === undefined ? {} : { count: state.count }),
        ...(state.job === undefined ? {} : { job: state.job }),
      };
    });
    for (const id of this.#since.keys()) if (!live.has(id)) this.#since.delete(id);
    return entries;
  }
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

A live web page of everything held under a prefix, every kind: holders (by fingerprint and client label, never
their owner ids), hold counts, fencing tokens, remaining leases and how long each has been held, a lock's waiters,
fair-lock queues, read-write lock readers and writer, semaphore permits and their leases, latch counts, run-once
jobs. Updated live, searchable. Prints its URL on the first line; stop it with Ctrl-C. Read-only unless
--allow-unlock.

Options:
  --host <addr>        address to listen on (default: 127.0.0.1); any other needs --token
  --port <n>           port (default: 7420; 0 picks a free one)
  --token <secret>     required in the URL (?token=…) for every request (default: $HOLDFAST_DASHBOARD_TOKEN)
  --allow-unlock       offer force-unlock of every kind that can be forced (each behind a confirmation)
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
  const dashboard = new Dashboard(holdfast, readOptions, interval, allowUnlock, token, connection.where);
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
  readonly #clock = new HoldClock();
  /** The last snapshot each stream was sent. */
  readonly #sent = new WeakMap<ServerResponse, DashboardSnapshot>();
  /** Host headers accepted (the address the server listens on, and localhost for a loopback one): no DNS rebinding. */
  #hosts = new Set<string>();

  constructor(
    readonly holdfast: Holdfast,
    readonly options: ReadOptions,
    readonly interval: number,
    readonly allowUnlock: boolean,
    readonly token: string | undefined,
    /** Where Redis is, for the message when it cannot be reached. @default 'Redis' */
    readonly where = 'Redis',
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
    const forceable = STORED_KINDS.filter((k) => k.store.forceFree).map((k) => k.kind);
    this.#reading ??= readDashboard(this.holdfast, this.options)
      .then(({ states, ...s }): DashboardSnapshot => ({ ...s, allowUnlock: this.allowUnlock, forceable, entries: this.#clock.entries(states, s.at) }))
      .catch((error: unknown): DashboardSnapshot => ({
        ...(this.#last ?? { at: Date.now(), prefix: this.holdfast.core.keys.prefix, scanned: 0, truncated: false, entries: [] }),
        allowUnlock: this.allowUnlock,
        forceable,
        error: `cannot reach ${this.where}: ${error instanceof Error ? error.message : String(error)}`,
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
    for (const res of this.#streams) {
      // two pushes that shared one reading (a page that connected while the timer's reading ran) send it once
      if (this.#sent.get(res) === snapshot) continue;
      this.#sent.set(res, snapshot);
      res.write(data);
    }
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
    const entry = STORED_KINDS.find((k) => k.kind === kind);
    if (!entry?.store.forceFree) {
      const offered = STORED_KINDS.filter((k) => k.store.forceFree).map((k) => `"${k.kind}"`);
      return send(res, 400, 'text/plain', `force-unlock is offered for kinds ${offered.join(', ')}\n`);
    }
    const unlocked = await entry.store.forceFree(this.holdfast, name);
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
