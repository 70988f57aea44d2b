/**
 * The mode digits the scripts take and the reply codes they answer, named once for the TypeScript side (each
 * script's header says which it takes and answers, in its `@args` and `@reply` lines, which scripts/gen-lua.ts turns
 * into the types of `scripts`).
 */

/**
 * `lock/acquire`'s mode digit: wait + 3 × mayHold. wait: 0 a single attempt, 1 the first attempt of a caller that
 * will wait (it joins the waiters when the lock is taken), 2 a waiter's later attempt; mayHold: 1 when the owner may
 * hold the lock already (re-entry possible), 0 for an owner id minted for this acquisition.
 */
export type AcquireMode = '0' | '1' | '2' | '3' | '4' | '5';

/** The release scripts' mode digit, all + 2 × retry: '0' one hold, '1' every hold of the owner at once, '2' a retry of one hold. */
export type ReleaseMode = '0' | '1' | '2';

/** What a release script answers besides the holds left (0 = released). */
export const RELEASE_REPLY = {
  /** The owner does not hold it (or a retry found it gone: see the release rule in internal/hold.ts). */
  NOT_HELD: -1,
  /** Holds would remain: nothing was changed, send the request again with a release marker. */
  MARKER_NEEDED: -2,
} as const;

/** What `cache/claim` answers first: what a caller of `getOrLoad` does next. */
export const CACHE_CLAIM = {
  /** Another load runs (`[0, pttl, loadOwner]`): wait for it. */
  BUSY: 0,
  /** This caller holds the load lock now (`[1]`): load. */
  LOAD: 1,
  /** The value is there (`[2, value]`). */
  HIT: 2,
  /** The load this caller waited for failed (`[4, errorJson]`). */
  FAILED: 4,
} as const;
