/**
 * Starts the built `holdfast dashboard` for a test and reads its URL from the first line of its output.
 */
import assert from 'node:assert/strict';
import { start, until, type CliProcess } from './cli.js';

/** Starts the dashboard; resolves its URL (the first line of its output) and the process. */
export async function startDashboard(args: string[], env: NodeJS.ProcessEnv): Promise<{ url: string; proc: CliProcess; stop: () => Promise<void> }> {
  const proc = start(['dashboard', '--port', '0', ...args], env);
  let stdout = '';
  proc.child.stdout?.on('data', (c: Buffer) => (stdout += c.toString()));
  await until(() => stdout.includes('\n') || proc.child.exitCode !== null, 15_000);
  const url = stdout.split('\n')[0]!;
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/(\?token=.*)?$/, `first line: ${stdout}`);
  return {
    url,
    proc,
    stop: async () => {
      proc.child.kill('SIGTERM');
      const result = await proc.done;
      assert.equal(result.code, 0, result.stderr);
    },
  };
}
