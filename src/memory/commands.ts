/**
 * The Redis commands the memory backend serves: those holdfast's scripts and the library call, with Redis' replies
 * and error messages. Each command takes its arguments as strings, as they cross a connection.
 *
 * @module
 */
import { MemoryReplyError, type Keyspace, type ZSet } from './keyspace.js';

/** A status reply (`+OK`): a string to a client, `{ok = 'OK'}` to a script. */
export class Status {
  constructor(readonly status: string) {}
}

/** A command's reply: an integer, a bulk string, nil, a status, or an array of replies. */
export type Reply = number | string | null | Status | Reply[];

const OK = new Status('OK');

function err(message: string): MemoryReplyError {
  return new MemoryReplyError(message);
}

const NOT_INTEGER = 'ERR value is not an integer or out of range';
const SYNTAX = 'ERR syntax error';

function int(s: string): number {
  if (!/^-?\d+$/.test(s)) throw err(NOT_INTEGER);
  const n = Number(s);
  if (!Number.isSafeInteger(n)) throw err(NOT_INTEGER);
  return n;
}

function arity(name: string, args: readonly string[], min: number, exact = false): void {
  if (args.length < min || (exact && args.length !== min)) throw err(`ERR wrong number of arguments for '${name}' command`);
}

/** Formats a score as Redis does (`inf`, `-inf`, else the shortest round-trip form). */
function score(n: number): string {
  if (n === Infinity) return 'inf';
  if (n === -Infinity) return '-inf';
  return String(n);
}

function parseScore(s: string): number {
  const l = s.toLowerCase();
  if (l === '+inf' || l === 'inf') return Infinity;
  if (l === '-inf') return -Infinity;
  const n = Number(s);
  if (s.trim() === '' || Number.isNaN(n)) throw err('ERR value is not a valid float');
  return n;
}

/** A score bound of ZRANGEBYSCORE and friends: `(5` exclusive, `5`, `-inf`, `+inf`. */
function bound(s: string): { value: number; open: boolean } {
  const open = s.startsWith('(');
  const text = open ? s.slice(1) : s;
  const l = text.toLowerCase();
  if (l === '+inf' || l === 'inf') return { value: Infinity, open };
  if (l === '-inf') return { value: -Infinity, open };
  const value = Number(text);
  if (text.trim() === '' || Number.isNaN(value)) throw err('ERR min or max is not a float');
  return { value, open };
}

function above(v: number, min: { value: number; open: boolean }): boolean {
  return min.open ? v > min.value : v >= min.value;
}

function below(v: number, max: { value: number; open: boolean }): boolean {
  return max.open ? v < max.value : v <= max.value;
}

/** A Redis glob (`*`, `?`, `[...]`, `\x`) as a regular expression. */
export function globToRegExp(glob: string): RegExp {
  let re = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*') re += '[\\s\\S]*';
    else if (c === '?') re += '[\\s\\S]';
    else if (c === '\\' && i + 1 < glob.length) re += '\\' + glob[++i];
    else if (c === '[') {
      const end = glob.indexOf(']', i + 1);
      if (end < 0) re += '\\[';
      else {
        let body = glob.slice(i + 1, end).replace(/\\/g, '\\\\');
        if (body.startsWith('^')) body = '^' + body.slice(1);
        re += `[${body}]`;
        i = end;
      }
    } else re += c.replace(/[.+^${}()|\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`);
}

/** Index range of LRANGE / ZRANGE: negative from the end, clamped. */
function range(len: number, startS: string, stopS: string): [number, number] {
  let start = int(startS);
  let stop = int(stopS);
  if (start < 0) start = Math.max(0, len + start);
  if (stop < 0) stop = len + stop;
  if (stop >= len) stop = len - 1;
  return [start, stop];
}

function zWithScores(z: ZSet, members: readonly string[], withScores: boolean): Reply[] {
  if (!withScores) return [...members];
  const out: Reply[] = [];
  for (const m of members) out.push(m, score(z.scores.get(m)!));
  return out;
}

/** ZRANGEBYSCORE / ZREVRANGEBYSCORE after the key and the two bounds: `WITHSCORES`, `LIMIT offset count`. */
function byScore(store: Keyspace, args: readonly string[], reverse: boolean): Reply {
  arity(reverse ? 'zrevrangebyscore' : 'zrangebyscore', args, 3);
  const [key, a, b] = args as [string, string, string];
  const min = bound(reverse ? b : a);
  const max = bound(reverse ? a : b);
  let withScores = false;
  let offset = 0;
  let count = -1;
  for (let i = 3; i < args.length; i++) {
    const opt = args[i]!.toLowerCase();
    if (opt === 'withscores') withScores = true;
    else if (opt === 'limit' && i + 2 < args.length) {
      offset = int(args[++i]!);
      count = int(args[++i]!);
    } else throw err(SYNTAX);
  }
  const z = store.getTyped(key, 'zset')?.value;
  if (!z) return [];
  let members = z.ordered().filter((m) => {
    const s = z.scores.get(m)!;
    return above(s, min) && below(s, max);
  });
  if (reverse) members = members.reverse();
  if (offset < 0) return [];
  members = members.slice(offset, count < 0 ? undefined : offset + count);
  return zWithScores(z, members, withScores);
}

type Command = (store: Keyspace, args: readonly string[]) => Reply;

/** `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT|PXAT|KEEPTTL]`. */
function set(store: Keyspace, args: readonly string[]): Reply {
  arity('set', args, 2);
  const [key, value] = args as [string, string];
  let nx = false;
  let xx = false;
  let get = false;
  let keepTtl = false;
  let at: number | undefined;
  for (let i = 2; i < args.length; i++) {
    const opt = args[i]!.toLowerCase();
    if (opt === 'nx') nx = true;
    else if (opt === 'xx') xx = true;
    else if (opt === 'get') get = true;
    else if (opt === 'keepttl') keepTtl = true;
    else if ((opt === 'px' || opt === 'ex' || opt === 'pxat' || opt === 'exat') && i + 1 < args.length) {
      if (at !== undefined) throw err(SYNTAX);
      const n = int(args[++i]!);
      if (n <= 0) throw err("ERR invalid expire time in 'set' command");
      at = opt === 'px' ? store.now() + n : opt === 'ex' ? store.now() + n * 1000 : opt === 'pxat' ? n : n * 1000;
    } else throw err(SYNTAX);
  }
  if ((nx && xx) || (keepTtl && at !== undefined)) throw err(SYNTAX);
  const old = get ? (store.getTyped(key, 'string')?.value ?? null) : undefined;
  const exists = store.get(key) !== undefined;
  if ((nx && exists) || (xx && !exists)) return get ? (old ?? null) : null;
  if (exists && !keepTtl && store.get(key)!.type !== 'string') store.delete(key);
  store.setString(key, value, keepTtl);
  if (at !== undefined) store.expireAt(key, at);
  return get ? (old ?? null) : OK;
}

function incrBy(store: Keyspace, key: string, by: number): Reply {
  const v = store.getTyped(key, 'string');
  const n = v === undefined ? 0 : int(v.value);
  const next = n + by;
  if (!Number.isSafeInteger(next)) throw err('ERR increment or decrement would overflow');
  store.setString(key, String(next), true);
  return next;
}

function pexpire(store: Keyspace, args: readonly string[], unit: number, name: string): Reply {
  arity(name, args, 2);
  const [key, ms] = args as [string, string];
  const n = int(ms);
  for (let i = 2; i < args.length; i++) {
    if (!['nx', 'xx', 'gt', 'lt'].includes(args[i]!.toLowerCase())) throw err(`ERR Unsupported option ${args[i]}`);
  }
  if (store.get(key) === undefined) return 0;
  const opts = new Set(args.slice(2).map((a) => a.toLowerCase()));
  const current = store.expiryOf(key);
  const at = store.now() + n * unit;
  if (opts.has('nx') && current !== undefined) return 0;
  if (opts.has('xx') && current === undefined) return 0;
  if (opts.has('gt') && (current === undefined || at <= current)) return 0;
  if (opts.has('lt') && current !== undefined && at >= current) return 0;
  store.expireAt(key, at);
  return 1;
}

function pttl(store: Keyspace, key: string): number {
  if (store.get(key) === undefined) return -2;
  const at = store.expiryOf(key);
  return at === undefined ? -1 : Math.max(0, at - store.now());
}

function hashPairs(name: string, args: readonly string[]): void {
  if (args.length < 3 || (args.length - 1) % 2 !== 0) throw err(`ERR wrong number of arguments for '${name}' command`);
}

/** The command table, by lower-case name. Scripts and clients reach the same functions. */
export const COMMANDS: Readonly<Record<string, Command>> = {
  ping: (_s, args) => (args.length > 0 ? args[0]! : new Status('PONG')),
  time: (store) => {
    const now = store.now();
    const ms = Math.floor(now);
    return [String(Math.floor(ms / 1000)), String((ms % 1000) * 1000 + Math.floor((now - ms) * 1000))];
  },
  flushdb: (store) => (store.flush(), OK),
  flushall: (store) => (store.flush(), OK),

  get: (store, args) => (arity('get', args, 1, true), store.getTyped(args[0]!, 'string')?.value ?? null),
  set,
  incr: (store, args) => (arity('incr', args, 1, true), incrBy(store, args[0]!, 1)),
  decr: (store, args) => (arity('decr', args, 1, true), incrBy(store, args[0]!, -1)),
  incrby: (store, args) => (arity('incrby', args, 2, true), incrBy(store, args[0]!, int(args[1]!))),
  decrby: (store, args) => (arity('decrby', args, 2, true), incrBy(store, args[0]!, -int(args[1]!))),
  del: (store, args) => {
    arity('del', args, 1);
    let n = 0;
    for (const k of args) if (store.delete(k)) n++;
    return n;
  },
  exists: (store, args) => {
    arity('exists', args, 1);
    let n = 0;
    for (const k of args) if (store.get(k) !== undefined) n++;
    return n;
  },
  pexpire: (store, args) => pexpire(store, args, 1, 'pexpire'),
  pttl: (store, args) => (arity('pttl', args, 1, true), pttl(store, args[0]!)),
  ttl: (store, args) => {
    arity('ttl', args, 1, true);
    const ms = pttl(store, args[0]!);
    return ms < 0 ? ms : Math.round(ms / 1000);
  },
  keys: (store, args) => {
    arity('keys', args, 1, true);
    const re = globToRegExp(args[0]!);
    return store.keys().filter((k) => re.test(k));
  },
  persist: (store, args) => (arity('persist', args, 1, true), store.get(args[0]!) !== undefined && store.persist(args[0]!) ? 1 : 0),
  scan: (store, args) => {
    arity('scan', args, 1);
    int(args[0]!);
    let re: RegExp | undefined;
    for (let i = 1; i < args.length; i += 2) {
      const opt = args[i]!.toLowerCase();
      if (i + 1 >= args.length) throw err(SYNTAX);
      if (opt === 'match') re = globToRegExp(args[i + 1]!);
      else if (opt === 'count') int(args[i + 1]!);
      else if (opt !== 'type') throw err(SYNTAX);
    }
    // one pass over the whole keyspace (COUNT is a hint): the cursor is always done
    return ['0', re ? store.keys().filter((k) => re.test(k)) : store.keys()];
  },

  hget: (store, args) => (arity('hget', args, 2, true), store.getTyped(args[0]!, 'hash')?.value.get(args[1]!) ?? null),
  hmget: (store, args) => {
    arity('hmget', args, 2);
    const h = store.getTyped(args[0]!, 'hash')?.value;
    return args.slice(1).map((f) => h?.get(f) ?? null);
  },
  hgetall: (store, args) => {
    arity('hgetall', args, 1, true);
    const out: string[] = [];
    for (const [f, v] of store.getTyped(args[0]!, 'hash')?.value ?? []) out.push(f, v);
    return out;
  },
  hvals: (store, args) => (arity('hvals', args, 1, true), [...(store.getTyped(args[0]!, 'hash')?.value.values() ?? [])]),
  hset: (store, args) => {
    hashPairs('hset', args);
    const h = store.getOrCreate(args[0]!, 'hash').value;
    let added = 0;
    for (let i = 1; i < args.length; i += 2) {
      if (!h.has(args[i]!)) added++;
      h.set(args[i]!, args[i + 1]!);
    }
    return added;
  },
  hsetnx: (store, args) => {
    arity('hsetnx', args, 3, true);
    const h = store.getOrCreate(args[0]!, 'hash').value;
    if (h.has(args[1]!)) return 0;
    h.set(args[1]!, args[2]!);
    return 1;
  },
  hdel: (store, args) => {
    arity('hdel', args, 2);
    const h = store.getTyped(args[0]!, 'hash')?.value;
    if (!h) return 0;
    let n = 0;
    for (const f of args.slice(1)) if (h.delete(f)) n++;
    store.dropIfEmpty(args[0]!);
    return n;
  },
  hincrby: (store, args) => {
    arity('hincrby', args, 3, true);
    const by = int(args[2]!);
    const h = store.getOrCreate(args[0]!, 'hash').value;
    const old = h.get(args[1]!);
    if (old !== undefined && !/^-?\d+$/.test(old)) throw err('ERR hash value is not an integer');
    const next = (old === undefined ? 0 : Number(old)) + by;
    if (!Number.isSafeInteger(next)) throw err('ERR increment or decrement would overflow');
    h.set(args[1]!, String(next));
    return next;
  },

  rpush: (store, args) => {
    arity('rpush', args, 2);
    const l = store.getOrCreate(args[0]!, 'list').value;
    l.push(...args.slice(1));
    return l.length;
  },
  lpop: (store, args) => {
    arity('lpop', args, 1);
    const l = store.getTyped(args[0]!, 'list')?.value;
    if (args.length > 1) {
      const n = int(args[1]!);
      if (!l) return null;
      const out = l.splice(0, n);
      store.dropIfEmpty(args[0]!);
      return out;
    }
    if (!l) return null;
    const v = l.shift() ?? null;
    store.dropIfEmpty(args[0]!);
    return v;
  },
  llen: (store, args) => (arity('llen', args, 1, true), store.getTyped(args[0]!, 'list')?.value.length ?? 0),
  lrange: (store, args) => {
    arity('lrange', args, 3, true);
    const l = store.getTyped(args[0]!, 'list')?.value ?? [];
    const [start, stop] = range(l.length, args[1]!, args[2]!);
    return start > stop ? [] : l.slice(start, stop + 1);
  },
  lrem: (store, args) => {
    arity('lrem', args, 3, true);
    const l = store.getTyped(args[0]!, 'list')?.value;
    const count = int(args[1]!);
    if (!l) return 0;
    const value = args[2]!;
    let removed = 0;
    const limit = count === 0 ? Infinity : Math.abs(count);
    if (count >= 0) {
      for (let i = 0; i < l.length && removed < limit; ) {
        if (l[i] === value) {
          l.splice(i, 1);
          removed++;
        } else i++;
      }
    } else {
      for (let i = l.length - 1; i >= 0 && removed < limit; i--) {
        if (l[i] === value) {
          l.splice(i, 1);
          removed++;
        }
      }
    }
    store.dropIfEmpty(args[0]!);
    return removed;
  },

  zadd: (store, args) => {
    arity('zadd', args, 3);
    let i = 1;
    const flags = new Set<string>();
    while (i < args.length && ['nx', 'xx', 'gt', 'lt', 'ch'].includes(args[i]!.toLowerCase())) flags.add(args[i++]!.toLowerCase());
    const pairs = args.slice(i);
    if (pairs.length === 0 || pairs.length % 2 !== 0) throw err(SYNTAX);
    if (flags.has('nx') && (flags.has('xx') || flags.has('gt') || flags.has('lt'))) {
      throw err('ERR XX and NX options at the same time are not compatible');
    }
    const parsed: [number, string][] = [];
    for (let j = 0; j < pairs.length; j += 2) parsed.push([parseScore(pairs[j]!), pairs[j + 1]!]);
    const z = store.getOrCreate(args[0]!, 'zset').value;
    let added = 0;
    let changed = 0;
    for (const [s, m] of parsed) {
      const old = z.scores.get(m);
      if (old === undefined) {
        if (flags.has('xx')) continue;
        z.set(m, s);
        added++;
      } else {
        if (flags.has('nx')) continue;
        if (flags.has('gt') && s <= old) continue;
        if (flags.has('lt') && s >= old) continue;
        if (s !== old) {
          z.set(m, s);
          changed++;
        }
      }
    }
    store.dropIfEmpty(args[0]!);
    return flags.has('ch') ? added + changed : added;
  },
  zcard: (store, args) => (arity('zcard', args, 1, true), store.getTyped(args[0]!, 'zset')?.value.size ?? 0),
  zscore: (store, args) => {
    arity('zscore', args, 2, true);
    const s = store.getTyped(args[0]!, 'zset')?.value.scores.get(args[1]!);
    return s === undefined ? null : score(s);
  },
  zcount: (store, args) => {
    arity('zcount', args, 3, true);
    const min = bound(args[1]!);
    const max = bound(args[2]!);
    const z = store.getTyped(args[0]!, 'zset')?.value;
    if (!z) return 0;
    let n = 0;
    for (const s of z.scores.values()) if (above(s, min) && below(s, max)) n++;
    return n;
  },
  zrange: (store, args) => {
    arity('zrange', args, 3);
    let withScores = false;
    for (const opt of args.slice(3)) {
      if (opt.toLowerCase() === 'withscores') withScores = true;
      else throw err(SYNTAX);
    }
    const z = store.getTyped(args[0]!, 'zset')?.value;
    if (!z) return [];
    const ordered = z.ordered();
    const [start, stop] = range(ordered.length, args[1]!, args[2]!);
    return start > stop ? [] : zWithScores(z, ordered.slice(start, stop + 1), withScores);
  },
  zrangebyscore: (store, args) => byScore(store, args, false),
  zrevrangebyscore: (store, args) => byScore(store, args, true),
  zrem: (store, args) => {
    arity('zrem', args, 2);
    const z = store.getTyped(args[0]!, 'zset')?.value;
    if (!z) return 0;
    let n = 0;
    for (const m of args.slice(1)) if (z.delete(m)) n++;
    store.dropIfEmpty(args[0]!);
    return n;
  },
  zremrangebyscore: (store, args) => {
    arity('zremrangebyscore', args, 3, true);
    const min = bound(args[1]!);
    const max = bound(args[2]!);
    const z = store.getTyped(args[0]!, 'zset')?.value;
    if (!z) return 0;
    let n = 0;
    for (const [m, s] of [...z.scores]) {
      if (above(s, min) && below(s, max)) {
        z.delete(m);
        n++;
      }
    }
    store.dropIfEmpty(args[0]!);
    return n;
  },

  publish: (store, args) => (arity('publish', args, 2, true), store.publish(args[0]!, args[1]!, false)),
  spublish: (store, args) => (arity('spublish', args, 2, true), store.publish(args[0]!, args[1]!, true)),

  config: (_s, args) => {
    arity('config', args, 1);
    const sub = args[0]!.toLowerCase();
    if (sub === 'get') {
      // one process, no eviction: the policy holdfast wants
      const known: Record<string, string> = { 'maxmemory-policy': 'noeviction', appendonly: 'no', maxmemory: '0' };
      const out: string[] = [];
      for (const pattern of args.slice(1)) {
        const re = globToRegExp(pattern);
        for (const [k, v] of Object.entries(known)) if (re.test(k)) out.push(k, v);
      }
      return out;
    }
    if (sub === 'set') return OK;
    throw err(`ERR unknown subcommand '${args[0]}'. Try CONFIG HELP.`);
  },
  info: () => '# Server\r\nredis_version:7.2.0\r\nredis_mode:standalone\r\n# Persistence\r\nloading:0\r\naof_enabled:0\r\n# Replication\r\nrole:master\r\nconnected_slaves:0\r\n',
  // WAIT without a timer (see transport.ts): no replica ever acknowledges
  wait: (_s, args) => (arity('wait', args, 2, true), int(args[0]!), int(args[1]!), 0),
  waitaof: (_s, args) => {
    arity('waitaof', args, 3, true);
    if (int(args[0]!) > 0) throw err('ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.');
    int(args[1]!);
    int(args[2]!);
    return [0, 0];
  },
};

/** Runs one command. Unknown commands and bad arguments raise {@link MemoryReplyError}s with Redis' messages. */
export function runCommand(store: Keyspace, args: readonly string[]): Reply {
  if (args.length === 0) throw err('ERR empty command');
  const name = args[0]!.toLowerCase();
  const fn = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!fn) {
    const shown = args
      .slice(1)
      .map((a) => `'${a}'`)
      .join(' ');
    throw err(`ERR unknown command '${args[0]}', with args beginning with: ${shown}${shown ? ' ' : ''}`);
  }
  return fn(store, args.slice(1));
}
