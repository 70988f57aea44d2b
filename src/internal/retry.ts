import { RedisConnectionError } from '../errors.js';

/**
 * Runs `attempt(n)` (n = 1, 2, …) until it settles otherwise than with a {@link RedisConnectionError}, pausing
 * 25 ms × n between tries, for as long as `mayRetry(n)` says so; then the last error is thrown. For requests that are
 * safe to send again (a release with its request id, a fair-lock claim).
 */
export async function retryOnConnectionError<T>(attempt: (n: number) => Promise<T>, mayRetry: (n: number) => boolean): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!(error instanceof RedisConnectionError) || !mayRetry(n)) throw error;
      await new Promise((r) => setTimeout(r, 25 * n));
    }
  }
}
