/**
 * The Lua bridge of the memory backend: holdfast's own scripts run in-process on fengari (a Lua VM in JavaScript),
 * against the store's keyspace, with Redis' conventions:
 *
 * - `KEYS`, `ARGV`, `redis.call` / `redis.pcall` / `redis.sha1hex` / `redis.error_reply` / `redis.status_reply`;
 * - values cross as Redis converts them: an integer reply becomes a number, nil a `false`, a status `{ok=...}`, an
 *   error `{err=...}`; a script's number reply is truncated to an integer, `true` becomes 1, `false`/nil a nil, a table
 *   an array up to its first nil, `{err=...}` an error;
 * - Lua 5.1's numbers: Redis runs Lua 5.1, whose numbers are all doubles, where fengari runs Lua 5.3 with 32-bit
 *   integers. Every number that enters a script (a reply, `tonumber`, `math.floor`) is a float here, and floats print
 *   as 5.1 prints them (`5`, not `5.0`), so `'1:' .. token` and millisecond timestamps read the same as on Redis;
 * - each script is compiled once per SHA1 and process, in one Lua state that every store of the process shares (a
 *   script keeps nothing between calls: `KEYS`, `ARGV` and the store `redis.call` reaches are set for each call), so a
 *   new store costs nothing; a store still answers NOSCRIPT for a script it was not sent (`SCRIPT FLUSH` is per store);
 * - a script runs synchronously, so it is atomic as on Redis; the clock is read once per script.
 *
 * fengari is an optional peer dependency, loaded on the first script call of a store.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { runCommand, Status, type Reply } from './commands.js';
import { MemoryReplyError, type Keyspace } from './keyspace.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- fengari ships no types: its C-like API is used as `any` here only */
type LuaState = unknown;
interface Fengari {
  lua: any;
  lauxlib: any;
  lualib: any;
  luaconf: any;
  to_luastring(this: void, s: string): Uint8Array;
  to_jsstring(this: void, s: Uint8Array): string;
}

/** The process's Lua state. */
interface Vm {
  readonly f: Fengari;
  readonly L: LuaState;
  /** The store of the script being run: the one `redis.call` reaches. */
  store: Keyspace | undefined;
  /** Compiled scripts (registry references) by SHA1. */
  readonly compiled: Map<string, number>;
}

let shared: Vm | undefined;

const SETUP = `
unpack = table.unpack
local floor, tonumber_ = math.floor, tonumber
-- Lua 5.1 (Redis): every number is a double
tonumber = function(...) local n = tonumber_(...) if n then return n + 0.0 end return n end
math.floor = function(x) return floor(x) + 0.0 end
math.ceil = (function(ceil) return function(x) return ceil(x) + 0.0 end end)(math.ceil)
math.mod = math.fmod
string.gfind = string.gmatch
table.getn = function(t) return #t end
os, io, debug, package, require, dofile, loadfile = nil, nil, nil, nil, nil, nil, nil
redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING = 0, 1, 2, 3
redis.log = function() end
redis.setresp = function() end
redis.replicate_commands = function() return true end
redis.set_repl = function() end
redis.error_reply = function(e) return {err = e} end
redis.status_reply = function(s) return {ok = s} end
`;

let loading: Promise<Fengari> | undefined;

/** Loads fengari once per process, with 5.1's float-to-string form (`5`, not `5.0`). */
function loadFengari(): Promise<Fengari> {
  loading ??= (async () => {
    const before = process.env.FENGARICONF;
    const conf = { ...(before ? (JSON.parse(before) as object) : {}), LUA_COMPAT_FLOATSTRING: true };
    process.env.FENGARICONF = JSON.stringify(conf);
    let mod: { default?: Fengari } & Partial<Fengari>;
    const name = 'fengari';
    try {
      mod = (await import(name)) as typeof mod;
    } catch (error) {
      loading = undefined;
      throw new Error('holdfast/memory runs holdfast\'s Lua scripts on fengari, an optional peer dependency: install it (npm install fengari)', {
        cause: error,
      });
    } finally {
      if (before === undefined) delete process.env.FENGARICONF;
      else process.env.FENGARICONF = before;
    }
    const f = (mod.lua ? mod : mod.default) as Fengari;
    if (!f.luaconf.LUA_COMPAT_FLOATSTRING) {
      loading = undefined;
      throw new Error(
        'holdfast/memory: fengari was loaded before holdfast/memory without LUA_COMPAT_FLOATSTRING; import holdfast/memory first, or start node with FENGARICONF=\'{"LUA_COMPAT_FLOATSTRING":true}\'',
      );
    }
    return f;
  })();
  return loading;
}

/** Makes the Lua state ready for `store` (loads fengari on first use). Script calls wait for it; at once afterwards. */
export async function ensureVm(store: Keyspace): Promise<void> {
  if (store.vm) return;
  const f = await loadFengari();
  if (store.vm || store.closed) return;
  shared ??= createVm(f);
  store.vm = shared;
}

function createVm(f: Fengari): Vm {
  const { lua, lauxlib, lualib, to_luastring } = f;
  const L = lauxlib.luaL_newstate();
  lualib.luaL_openlibs(L);
  const vm: Vm = { f, L, store: undefined, compiled: new Map() };
  lua.lua_createtable(L, 0, 8);
  lua.lua_pushjsfunction(L, (l: LuaState) => redisCall(vm, l, true));
  lua.lua_setfield(L, -2, to_luastring('call'));
  lua.lua_pushjsfunction(L, (l: LuaState) => redisCall(vm, l, false));
  lua.lua_setfield(L, -2, to_luastring('pcall'));
  lua.lua_pushjsfunction(L, (l: LuaState) => {
    const s = lauxlib.luaL_checklstring(l, 1) as Uint8Array;
    lua.lua_pushstring(l, to_luastring(createHash('sha1').update(s).digest('hex')));
    return 1;
  });
  lua.lua_setfield(L, -2, to_luastring('sha1hex'));
  lua.lua_setglobal(L, to_luastring('redis'));
  const code = to_luastring(SETUP);
  if (lauxlib.luaL_loadbuffer(L, code, code.length, to_luastring('=setup')) !== lua.LUA_OK || lua.lua_pcall(L, 0, 0, 0) !== lua.LUA_OK) {
    throw new Error(`holdfast/memory: the Lua setup failed: ${lua.lua_tojsstring(L, -1)}`);
  }
  return vm;
}

/** A Lua number or string argument of `redis.call` as the string Redis sends (a number in its shortest form). */
function argOf(vm: Vm, L: LuaState, i: number): string {
  const { lua } = vm.f;
  const t = lua.lua_type(L, i);
  if (t === lua.LUA_TSTRING) return lua.lua_tojsstring(L, i) as string;
  if (t === lua.LUA_TNUMBER) return String(lua.lua_tonumber(L, i) as number);
  throw new MemoryReplyError('ERR Lua redis lib command arguments must be strings or integers');
}

/** Pushes a command's reply onto the Lua stack as Redis converts it. */
function pushReply(vm: Vm, L: LuaState, reply: Reply): void {
  const { lua, to_luastring } = vm.f;
  if (reply === null) lua.lua_pushboolean(L, false);
  else if (typeof reply === 'number') lua.lua_pushnumber(L, reply);
  else if (typeof reply === 'string') lua.lua_pushstring(L, to_luastring(reply));
  else if (reply instanceof Status) {
    lua.lua_createtable(L, 0, 1);
    lua.lua_pushstring(L, to_luastring(reply.status));
    lua.lua_setfield(L, -2, to_luastring('ok'));
  } else {
    lua.lua_createtable(L, reply.length, 0);
    for (let i = 0; i < reply.length; i++) {
      pushReply(vm, L, reply[i]!);
      lua.lua_rawseti(L, -2, i + 1);
    }
  }
}

function pushError(vm: Vm, L: LuaState, message: string): void {
  const { lua, to_luastring } = vm.f;
  lua.lua_createtable(L, 0, 1);
  lua.lua_pushstring(L, to_luastring(message));
  lua.lua_setfield(L, -2, to_luastring('err'));
}

const NOT_IN_SCRIPTS = new Set(['eval', 'evalsha', 'script', 'wait', 'waitaof', 'subscribe', 'ssubscribe', 'multi', 'exec']);

/** `redis.call` (raises the error reply) and `redis.pcall` (returns it as `{err=...}`). */
function redisCall(vm: Vm, L: LuaState, raise: boolean): number {
  const { lua } = vm.f;
  let message: string;
  try {
    const store = vm.store;
    if (!store) throw new MemoryReplyError('ERR redis.call outside a script');
    const n = lua.lua_gettop(L) as number;
    if (n === 0) throw new MemoryReplyError('ERR Please specify at least one argument for this redis lib call');
    const args: string[] = [];
    for (let i = 1; i <= n; i++) args.push(argOf(vm, L, i));
    if (NOT_IN_SCRIPTS.has(args[0]!.toLowerCase())) throw new MemoryReplyError('ERR This Redis command is not allowed from script');
    const reply = runCommand(store, args);
    pushReply(vm, L, reply);
    return 1;
  } catch (error) {
    message = error instanceof MemoryReplyError ? error.message : `ERR ${error instanceof Error ? error.message : String(error)}`;
  }
  pushError(vm, L, message);
  if (!raise) return 1;
  return lua.lua_error(L) as number;
}

/** Converts the value on top of the Lua stack into a reply, as Redis converts a script's return value. */
function toReply(vm: Vm, L: LuaState, depth = 0): Reply {
  const { lua, to_luastring } = vm.f;
  const t = lua.lua_type(L, -1);
  if (t === lua.LUA_TNUMBER) return Math.trunc(lua.lua_tonumber(L, -1) as number);
  if (t === lua.LUA_TSTRING) return lua.lua_tojsstring(L, -1) as string;
  if (t === lua.LUA_TBOOLEAN) return lua.lua_toboolean(L, -1) ? 1 : null;
  if (t !== lua.LUA_TTABLE) return null;
  lua.lua_getfield(L, -1, to_luastring('err'));
  if (lua.lua_type(L, -1) === lua.LUA_TSTRING) {
    const message = lua.lua_tojsstring(L, -1) as string;
    lua.lua_pop(L, 1);
    throw new MemoryReplyError(message);
  }
  lua.lua_pop(L, 1);
  lua.lua_getfield(L, -1, to_luastring('ok'));
  if (lua.lua_type(L, -1) === lua.LUA_TSTRING) {
    const status = lua.lua_tojsstring(L, -1) as string;
    lua.lua_pop(L, 1);
    return new Status(status);
  }
  lua.lua_pop(L, 1);
  const out: Reply[] = [];
  if (depth > 64) return out;
  for (let i = 1; ; i++) {
    lua.lua_rawgeti(L, -1, i);
    if (lua.lua_type(L, -1) === lua.LUA_TNIL) {
      lua.lua_pop(L, 1);
      break;
    }
    try {
      out.push(toReply(vm, L, depth + 1));
    } finally {
      lua.lua_pop(L, 1);
    }
  }
  return out;
}

/** The SHA1 of a script's source, as `SCRIPT LOAD` and `EVAL` name it. */
export function sha1(source: string): string {
  return createHash('sha1').update(source).digest('hex');
}

/**
 * Loads `source` into the store (compiled once per SHA1 and process); a syntax error is an `ERR Error compiling
 * script` reply.
 */
export function loadScript(store: Keyspace, source: string): string {
  const vm = store.vm as Vm;
  const sha = sha1(source);
  if (store.scripts.has(sha)) return sha;
  let ref = vm.compiled.get(sha);
  if (ref === undefined) {
    const { lua, lauxlib, to_luastring } = vm.f;
    const L = vm.L;
    const code = to_luastring(source);
    if (lauxlib.luaL_loadbuffer(L, code, code.length, to_luastring('@user_script')) !== lua.LUA_OK) {
      const message = lua.lua_tojsstring(L, -1) as string;
      lua.lua_pop(L, 1);
      throw new MemoryReplyError(`ERR Error compiling script (new function): ${message}`);
    }
    ref = lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX) as number;
    vm.compiled.set(sha, ref);
  }
  store.scripts.set(sha, ref);
  return sha;
}

function setArray(vm: Vm, name: string, values: readonly (string | number)[]): void {
  const { lua, to_luastring } = vm.f;
  const L = vm.L;
  lua.lua_createtable(L, values.length, 0);
  for (let i = 0; i < values.length; i++) {
    lua.lua_pushstring(L, to_luastring(String(values[i])));
    lua.lua_rawseti(L, -2, i + 1);
  }
  lua.lua_setglobal(L, to_luastring(name));
}

/** Runs a loaded script synchronously; `NOSCRIPT` when `sha` is not loaded. The VM must be ready ({@link ensureVm}). */
export function runScript(store: Keyspace, sha: string, keys: readonly string[], args: readonly (string | number)[]): Reply {
  const ref = store.scripts.get(sha.toLowerCase()) as number | undefined;
  if (ref === undefined) throw new MemoryReplyError('NOSCRIPT No matching script. Please use EVAL.');
  const vm = store.vm as Vm;
  const { lua } = vm.f;
  const L = vm.L;
  return store.frozen(() => {
    vm.store = store;
    const top = lua.lua_gettop(L) as number;
    try {
      setArray(vm, 'KEYS', keys);
      setArray(vm, 'ARGV', args);
      lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, ref);
      if (lua.lua_pcall(L, 0, 1, 0) !== lua.LUA_OK) {
        let message: string;
        if (lua.lua_type(L, -1) === lua.LUA_TTABLE) {
          lua.lua_getfield(L, -1, vm.f.to_luastring('err'));
          message = lua.lua_type(L, -1) === lua.LUA_TSTRING ? (lua.lua_tojsstring(L, -1) as string) : 'ERR unknown error';
        } else {
          const raw = lua.lua_type(L, -1) === lua.LUA_TSTRING || lua.lua_type(L, -1) === lua.LUA_TNUMBER ? (lua.lua_tojsstring(L, -1) as string) : 'unknown error';
          message = `ERR ${raw}`;
        }
        throw new MemoryReplyError(`${message} script: ${sha}, on @user_script.`);
      }
      return toReply(vm, L);
    } finally {
      vm.store = undefined;
      lua.lua_settop(L, top);
    }
  });
}
/* eslint-enable @typescript-eslint/no-explicit-any */
