import { RedisConnectionError } from '../errors.js';
import { backoff, pauseAfter, RELEASE_BACKOFF } from './backoff.js';

/**
 * Runs `attempt(n)` (n = 1, 2, …) until it settles otherwise than with a {@link RedisConnectionError}, pausing as
 * {@link RELEASE_BACKOFF} says between tries, for as long as `mayRetry(n, pauseMs)` says so (`pauseMs`: the pause
 * before the next try); then the last error is thrown. For requests that are safe to send again (a release with its
 * request id, a fair-lock claim).
 */
export async function retryOnConnectionError<T>(attempt: (n: number) => Promise<T>, mayRetry: (n: number, pauseMs: number) => boolean): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!(error instanceof RedisConnectionError) || !mayRetry(n, pauseAfter(RELEASE_BACKOFF, n))) throw error;
      await backoff(RELEASE_BACKOFF, n);
    }
  }
}
