/**
 * The cross-process clock check: a child process answers pings with its own `refNow()`; a shared clock puts every
 * answer inside the parent's [before, after] window.
 *
 * @module
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { refNow, summariseClock, type ClockReport, type ClockSample } from './clock.js';

const CHILD = fileURLToPath(new URL('./fixtures/clock-child.ts', import.meta.url));

/** Runs `rounds` ping-pongs with a fresh child process and summarises them. */
export async function measureCrossProcessClock(rounds = 200): Promise<ClockReport & { raw: ClockSample[] }> {
  const child = fork(CHILD, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  try {
    let failure: Error | undefined;
    child.once('error', (e) => (failure = e));
    const next = () =>
      new Promise<unknown>((resolve, reject) => {
        if (failure) reject(failure);
        else child.once('message', resolve);
      });
    if ((await next()) !== 'ready') throw new Error('clock child did not start');
    const raw: ClockSample[] = [];
    for (let i = 0; i < rounds; i++) {
      const reply = next();
      const before = refNow();
      child.send('t');
      const value = (await reply) as number;
      const after = refNow();
      raw.push({ before, child: value, after });
    }
    return { ...summariseClock(raw), raw };
  } finally {
    child.send('exit');
    child.kill();
  }
}
