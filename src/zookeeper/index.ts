/**
 * holdfast/zookeeper: the Lock, ReadWriteLock, Semaphore and leader Election of holdfast over Apache ZooKeeper, through the
 * `node-zookeeper-client` package (an optional peer dependency: install it to use this entry point).
 *
 * @packageDocumentation
 */
export { ZooKeeperHoldfast, type ZooKeeperHoldfastOptions, type ZooKeeperHoldfastEvents } from './client.js';
export { ZkLock, type ZkAcquireOptions, type ZkLockScope } from './lock.js';
export { ZkReadWriteLock, ZkRwSide, ZkReadLock, type ZkHeldByOptions, type ZkReaderInfo } from './read-write-lock.js';
export { ownerFingerprint } from '../internal/fingerprint.js';
export { ZkSemaphore, type ZkPermitOptions } from './semaphore.js';
export { ZkHeldLock, type ZkHoldState } from './hold.js';
export { ZkElection, ZkLeadership, type ZkCampaignOptions, type ZkRunOptions, type ZkLeaderScope } from './election.js';
export type { ElectionOptions, ObserveOptions, LeaderInfo, ElectionChange, ElectionInfo, CandidateInfo } from '../primitives/election.js';
export type { SessionLossReason } from './session.js';
export type { ReleaseEvent, WaitUntilFreeOptions } from '../internal/events.js';
export {
  HoldfastError,
  isHoldfastError,
  LockNotHeldError,
  AcquireTimeoutError,
  LockLostError,
  ZooKeeperConnectionError,
  UpgradeRefusedError,
  StaleTokenError,
  type HoldfastErrorCode,
  type LockLostReason,
} from '../errors.js';
