/**
 * holdfast/memory: an in-process backend for holdfast. `new Holdfast({ redis: memoryRedis() })` runs every primitive
 * without a server: holdfast's own Lua scripts run in-process (on fengari, a Lua VM in JavaScript: an optional peer
 * dependency, install it to use this entry point) against an in-memory keyspace with key expiry and pub/sub. For
 * tests and single-process programs, not for locking between processes.
 *
 * @packageDocumentation
 */
export { memoryRedis, memoryStore, type MemoryRedis, type MemoryRedisOptions } from './transport.js';
export { MemoryReplyError, type MemoryStore, type MemoryStoreOptions } from './keyspace.js';
export { serveMemoryStore, type MemoryServer, type ServeOptions } from './resp.js';
