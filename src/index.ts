/**
 * holdfast: distributed locks and synchronizers for TypeScript on Redis.
 *
 * @packageDocumentation
 */
export { Holdfast, toTransport, type HoldfastOptions, type HoldfastEvents } from './holdfast.js';
export type { HoldfastWarning } from './core.js';
export { Lock, HeldLock, type AcquireOptions, type AdoptOptions, type LockInfo, type LockScope } from './primitives/lock.js';
export type { WaitUntilFreeOptions, ReleaseEvent } from './internal/events.js';
export { FairLock, type FairLockOptions, type FairLockInfo } from './primitives/fair-lock.js';
export {
  ReadWriteLock,
  ReadLock,
  WriteLock,
  HeldReadLock,
  HeldWriteLock,
  ownerFingerprint,
  type HeldByOptions,
  type ReaderInfo,
  type ReadWriteLockOptions,
  type ReadWriteLockInfo,
  type ReadLockScope,
  type WriteLockScope,
} from './primitives/read-write-lock.js';
export { Semaphore, SemaphorePermits, MAX_PERMITS, type SemaphoreAcquireOptions, type SemaphoreSetOptions } from './primitives/semaphore.js';
export {
  PermitExpirableSemaphore,
  Permit,
  MAX_PERMIT_IDS,
  type PermitAcquireOptions,
  type PermitSemaphoreInfo,
  type PermitSemaphoreSetOptions,
} from './primitives/permit-expirable-semaphore.js';
export { CountDownLatch, type LatchSetOptions, type LatchAwaitOptions } from './primitives/count-down-latch.js';
export { MultiLock, HeldMultiLock, MAX_MULTI_LOCKS, type MultiLockScope } from './primitives/multi-lock.js';
export { FencedKey, type FencedSetOptions, type FencedValue } from './fencing/fenced-key.js';
export { fencedUpdate, fencedUpdateSql, quoteIdent, type SqlQuery, type FencedUpdateOptions } from './fencing/sql.js';
export type { RedisTransport, RedisSubscriber, ScriptArgs, ConnectionDiagnosis } from './client.js';
export { ioredisTransport, type IoredisLike } from './adapters/ioredis.js';
export { nodeRedisTransport, type NodeRedisLike } from './adapters/node-redis.js';
export { glideTransport, type GlideLike, type GlideConfig, type GlideTransportOptions } from './adapters/glide.js';
export {
  HoldfastError,
  isHoldfastError,
  LockNotHeldError,
  AcquireTimeoutError,
  LockLostError,
  PostgresConnectionError,
  RedisConnectionError,
  ClientClosedError,
  UpgradeRefusedError,
  StaleTokenError,
  ScriptError,
  QuorumNotReachedError,
  ReplicationNotReachedError,
  ReleaseFailedError,
  EvictionPolicyError,
  type NodeResult,
  LoadFailedError,
  type RemoteErrorInfo,
  type HoldfastErrorCode,
  type HoldfastErrorOptions,
  type LockLostReason,
} from './errors.js';
export {
  Redlock,
  RedlockLock,
  HeldRedlock,
  type RedlockOptions,
  type RedlockAcquireOptions,
  type RedlockAdoptOptions,
  type RedlockEvents,
} from './primitives/redlock.js';
export { RedlockSemaphore, HeldRedlockPermits, MAX_REDLOCK_PERMITS, type RedlockSemaphoreOptions } from './primitives/redlock-semaphore.js';
export type { ReplicaSync } from './internal/replica-sync.js';
export {
  Scheduler,
  ScheduledJob,
  JobClaim,
  type SchedulerOptions,
  type ClaimOptions,
  type JobLocks,
  type MissedTicks,
  type RunOutcome,
  type SchedulerEvents,
  type JobOptions,
  type JobContext,
  type JobFunction,
  type JobRunInfo,
  type SkipReason,
  type JobInfo,
} from './recipes/scheduler.js';
export { CacheLoader, jsonCodec, type Codec, type CacheLoaderOptions, type GetOrLoadOptions, type LoadContext, type Loader } from './recipes/cache-loader.js';
export { SegmentedStock, MAX_SEGMENTS, type SegmentedStockOptions } from './recipes/segmented-stock.js';
export { MAX_NAME_BYTES, MAX_DURATION_MS } from './internal/validate.js';
export { KINDS, KIND_NAMES, type KindEntry, type KindName, type KindState, type HeldKind, type HeldKindEntry, type JobState, type HolderState, type WaiterState } from './kinds.js';
export { STORED_KINDS, type KindStore, type StoredKind } from './kinds-redis.js';
export {
  CHANNELS,
  fingerprint,
  type PrimitiveKind,
  type AcquireContext,
  type AcquireOutcome,
  type ReleaseContext,
  type ReleaseOutcome,
  type LostMessage,
  type RenewMessage,
  type HandoffMessage,
  type ElectionMessage,
} from './diagnostics.js';
export {
  Election,
  Leadership,
  type ElectionOptions,
  type CampaignOptions,
  type RunOptions,
  type ObserveOptions,
  type LeaderInfo,
  type ElectionChange,
  type ElectionInfo,
  type CandidateInfo,
  type LeaderScope,
} from './primitives/election.js';
export { migratePostgres, postgresSchemaSql, type MigrationResult, type Queryable, type QueryRows } from './postgres/schema.js';
export type { StoreKind } from './store.js';
export type { StoreInfo, RedisStoreInfo, PostgresStoreInfo } from './holdfast.js';
