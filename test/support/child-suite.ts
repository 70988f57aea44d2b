/**
 * Runs a suite file once more in a child process under other settings (another RESP version, PostgreSQL through
 * PgBouncer), and reads its TAP summary.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

/** Runs `file` under node's test runner with `env` added; resolves its exit code, TAP summary counts and output. */
export function runSuite(file: string, env: Record<string, string>): Promise<{ code: number | null; pass: number; fail: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', '--test-timeout=400000', file], {
      cwd: ROOT,
      // without NODE_TEST_CONTEXT, which would make the child report to this runner instead of printing its summary
      env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_TEST_CONTEXT')), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('exit', (code) => {
      const count = (what: string): number => Number(new RegExp(`^# ${what} (\\d+)$`, 'm').exec(output)?.[1] ?? -1);
      resolve({ code, pass: count('pass'), fail: count('fail'), output });
    });
  });
}
