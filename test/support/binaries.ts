/**
 * The server binaries the test support starts, from the environment so that the same suites run against Redis or a
 * compatible server (CI runs the default suite once more against Valkey):
 *
 * - `HOLDFAST_REDIS_SERVER` (default `redis-server`)
 * - `HOLDFAST_REDIS_CLI` (default `redis-cli`)
 * - `HOLDFAST_REDIS_SENTINEL` (default `redis-sentinel`; when it is not installed, sentinels run as
 *   `<server> --sentinel`)
 *
 * A value is a command name looked up in `PATH`, or a path.
 */
import { spawnSync } from 'node:child_process';

const env = (name: string, fallback: string): string => {
  const value = process.env[name]?.trim();
  return value ? value : fallback;
};

export const REDIS_SERVER = env('HOLDFAST_REDIS_SERVER', 'redis-server');
export const REDIS_CLI = env('HOLDFAST_REDIS_CLI', 'redis-cli');
export const REDIS_SENTINEL = env('HOLDFAST_REDIS_SENTINEL', 'redis-sentinel');

/** Whether `name` (a command or a path) can be run. */
export function hasBinary(name: string): boolean {
  return spawnSync('sh', ['-c', 'command -v "$1"', 'sh', name]).status === 0;
}
