/** Child worker processes for multi-process tests. */
import { spawn, type ChildProcess } from 'node:child_process';

/** Spawns `node --import tsx <script> ...args`. */
export function spawnWorker(script: string, args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Resolves with the first stdout line that matches `pattern`; rejects if the process exits first or after `timeoutMs`. */
export function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let stderr = '';
    const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      buffer += chunk.toString();
      for (const line of buffer.split('\n')) {
        if (pattern.test(line)) {
          clearTimeout(timer);
          child.stdout?.off('data', onData);
          resolve(line);
          return;
        }
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code} before printing ${pattern}; stderr: ${stderr}`));
    });
  });
}

/** Resolves with the exit code (rejects after `timeoutMs`). */
export function waitForExit(child: ChildProcess, timeoutMs = 30_000): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => reject(new Error(`worker did not exit within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code !== 0 && stderr) process.stderr.write(stderr);
      resolve(code);
    });
  });
}
