/**
 * Runs the BUILT holdfast command (`dist/cli/main.js`, from `npm run build`) as a child process. If the build is
 * missing, runs the package's tsup build first.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');
export const CLI = join(ROOT, 'dist', 'cli', 'main.js');

/** Makes sure dist/cli/main.js and the library entry it imports (dist/index.js) exist: runs the package's tsup build. */
export async function ensureBuilt(): Promise<void> {
  if (existsSync(CLI) && existsSync(join(ROOT, 'dist', 'index.js'))) return;
  const { build } = await import('tsup');
  await build({ silent: true });
  // the ESM entries re-export the CommonJS build (as `npm run build` writes them)
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'esm-entries.mjs')], { cwd: ROOT, stdio: 'ignore' });
}

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** A running holdfast process. */
export interface CliProcess {
  child: ChildProcess;
  done: Promise<CliResult>;
}

/** Starts `holdfast ...args`. */
export function start(args: string[], env: NodeJS.ProcessEnv = {}, cwd = ROOT): CliProcess {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const done = new Promise<CliResult>((resolve) => {
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr, ms: performance.now() - started }));
  });
  return { child, done };
}

/** Runs `holdfast ...args` to the end; kills it (and fails) if it runs longer than `timeoutMs`. */
export async function run(args: string[], env: NodeJS.ProcessEnv = {}, cwd = ROOT, timeoutMs = 30_000): Promise<CliResult> {
  const p = start(args, env, cwd);
  const timer = setTimeout(() => p.child.kill('SIGKILL'), timeoutMs);
  const result = await p.done;
  clearTimeout(timer);
  if (result.signal === 'SIGKILL') throw new Error(`holdfast ${args.join(' ')} did not end within ${timeoutMs} ms; stderr: ${result.stderr}`);
  return result;
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `check` every 25 ms until it returns true or `timeoutMs` passes. */
export async function until(check: () => Promise<boolean> | boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting for a condition');
    await sleep(25);
  }
}
