/**
 * `redis-cli` for test support code (cluster setup, slot migration, sentinel queries): asynchronous, so a test can
 * keep running holdfast traffic in the same process while a topology changes.
 */
import { execFile } from 'node:child_process';
import { REDIS_CLI } from './binaries.js';

/** Runs `redis-cli -h 127.0.0.1 -p <port> ...args` and resolves its stdout, trimmed. Rejects on a non-zero exit. */
export function cli(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(REDIS_CLI, ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`redis-cli -p ${port} ${args.join(' ')}: ${error.message} ${stderr}`));
      else resolve(stdout.trim());
    });
  });
}

/** Polls `check` every 50 ms until it returns true, or throws after `timeoutMs` with `what`. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A field of an INFO-style `key:value` reply. */
export function infoField(info: string, field: string): string | undefined {
  for (const line of info.split(/\r?\n/)) if (line.startsWith(field + ':')) return line.slice(field.length + 1).trim();
  return undefined;
}
