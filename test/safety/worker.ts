/**
 * A client worker process: loops acquire → use the protected resource → release, recording every event in its own
 * JSONL history (see history.ts). Started by the runner with one JSON argument (a {@link WorkerConfig}); reports
 * `ready`, `held` and `free` over IPC so the runner can aim faults at the current holder; `stop` ends it after the
 * current iteration. With `names` (the Cluster backend) each iteration picks a lock kind and a name from a moving
 * window of a long list, and `loops` such loops run at once, each a worker of its own in the history.
 *
 * A "use" is a read-modify-write of both oracle counters (fenced and unfenced) with `workMs` of work in between.
 * The worker behaves like a careful user: it starts a use only with at least `useBudgetMs` of its lease left and
 * checks the lock's `signal` before writing. That check cannot close the gap a pause opens between the check and the
 * write; the fenced resource does.
 *
 * @module
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { isHoldfastError } from '../../src/index.js';
import { clusterBackend, electionBackend, holdfastBackend, majorityBackend, redlockBackend, type AcquireTarget, type HeldHandle, type LockBackend } from './backends.js';
import { refNow } from './clock.js';
import { HistoryWriter } from './history.js';
import { Oracle } from './oracle.js';
import { rng, type WorkerConfig, type WorkerMessage } from './protocol.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const codeOf = (e: unknown) => (e && typeof e === 'object' && 'code' in e ? String(e.code) : e instanceof Error ? e.name : 'unknown');
/** holdfast's code, or `untyped <name>: <message>` for an error that is not holdfast's (it should not reach a caller). */
const strictCodeOf = (e: unknown) => (isHoldfastError(e) ? e.code : `untyped ${e instanceof Error ? `${e.name}: ${e.message.slice(0, 120)}` : String(e)}`);

async function main(): Promise<void> {
  // An orphan (the runner died) must not keep running.
  process.on('disconnect', () => process.exit(0));
  const config = JSON.parse(process.argv[2] ?? '{}') as WorkerConfig;
  const history = new HistoryWriter(config.historyPath);
  const send = (m: WorkerMessage) => process.send?.(m);
  const loops = config.loops ?? 1;
  if (loops > 1 && config.backend !== 'holdfast-cluster') throw new Error('only the holdfast-cluster backend runs several loops');
  const ids = loops === 1 ? [config.id] : Array.from({ length: loops }, (_, i) => `${config.id}.${i + 1}`);

  // Stall detector: a 5 ms tick that notices when it ran late (SIGSTOP, CPU starvation, long GC): every loop stalls.
  let last = refNow();
  const tick = setInterval(() => {
    const t = refNow();
    if (t - last > config.stallMs) for (const w of ids) history.write({ type: 'stall', w, from: last, to: t });
    last = t;
  }, 5);

  const oracleRedis = new Redis(config.oracleUrl, { maxRetriesPerRequest: 3 });
  oracleRedis.on('error', () => {});
  const oracle = new Oracle(oracleRedis);
  const hooks = {
    current: undefined as string | undefined,
    onRenewed(sendRef: number, validUntil: number, leaseMs: number) {
      if (this.current) history.write({ type: 'ext.ok', w: config.id, grant: this.current, ref: refNow(), sendRef, validUntil, leaseMs });
    },
  };
  const backendConfig = {
    urls: config.urls,
    lock: config.lock,
    prefix: config.prefix,
    adapter: config.adapter,
    leaseMs: config.leaseMs,
    watchdog: config.watchdog,
    watchdogIntervalMs: config.watchdogIntervalMs,
    commandTimeoutMs: config.commandTimeoutMs,
  };
  const backend: LockBackend =
    config.backend === 'majority'
      ? await majorityBackend(backendConfig)
      : config.backend === 'holdfast-cluster'
        ? await clusterBackend(backendConfig)
        : config.backend === 'holdfast-election'
          ? await electionBackend(backendConfig, hooks)
          : config.backend === 'redlock' || config.backend === 'redlock-semaphore'
            ? await redlockBackend(backendConfig, hooks, config.backend === 'redlock-semaphore' ? (config.permits ?? 1) : undefined)
            : await holdfastBackend(backendConfig, hooks, config.backend === 'holdfast-fair');

  // Many names: a window of the list that moves with the shared clock (see NamesConfig).
  const names = config.names;
  const list = names ? (JSON.parse(readFileSync(names.path, 'utf8')) as string[]) : [];
  const pick = (random: () => number): AcquireTarget | undefined => {
    if (!names) return undefined;
    const from = Math.floor(refNow() / names.periodMs) * names.step;
    const name = list[(from + Math.floor(random() * names.window)) % list.length]!;
    return { kind: names.kinds[Math.floor(random() * names.kinds.length)]!, name };
  };

  const stop = new AbortController();
  process.on('message', (m) => {
    if (m === 'stop') stop.abort();
  });
  send({ t: 'ready' });

  // The Cluster backend is holdfast alone: every error it lets out must be one of holdfast's.
  const holdfastCodeOf = config.backend === 'holdfast-cluster' ? strictCodeOf : codeOf;

  /** One acquire → use → release loop: the worker `w`. */
  const run = async (w: string, random: () => number): Promise<void> => {
    let n = 0;
    while (!stop.signal.aborted) {
      const grant = `${w}#${++n}`;
      const target = pick(random);
      const lock = target ? `${target.kind}:${target.name}` : config.lock;
      history.write({ type: 'acq.inv', w, grant, ref: refNow(), lock });
      let held: HeldHandle;
      try {
        held = await backend.acquire({
          timeoutMs: config.acquireTimeoutMs,
          signal: stop.signal,
          ...(target ? { target, onRenewed: (sendRef, validUntil, leaseMs) => history.write({ type: 'ext.ok', w, grant, ref: refNow(), sendRef, validUntil, leaseMs }) } : {}),
        });
      } catch (error) {
        const code = stop.signal.aborted ? 'STOPPED' : holdfastCodeOf(error);
        // A timed-out or cut acquire may still have been granted in Redis: unknown (info), never "held".
        const definite = code === 'ACQUIRE_TIMEOUT' || stop.signal.aborted;
        history.write({ type: definite ? 'acq.fail' : 'acq.info', w, grant, ref: refNow(), lock, code });
        if (!definite) await sleep(20 + random() * 30);
        continue;
      }
      history.write({ type: 'acq.ok', w, grant, ref: refNow(), lock, token: held.token, validUntil: held.validUntil(), sendRef: held.sendRef, leaseMs: held.leaseMs });
      hooks.current = grant;
      send({ t: 'held', grant, token: held.token });
      const onLost = () => history.write({ type: 'lost', w, grant, ref: refNow(), reason: String((held.signal.reason as Error | undefined)?.message ?? 'lost') });
      if (held.signal.aborted) onLost();
      else held.signal.addEventListener('abort', onLost, { once: true });

      let extensions = 0;
      // Between usesMin and usesPerGrant uses: a mix of short holds and holds that span several renewals.
      const min = Math.min(config.usesMin ?? 1, config.usesPerGrant);
      const uses = min + Math.floor(random() * (config.usesPerGrant - min + 1));
      for (let i = 0; i < uses && !held.signal.aborted; ) {
        const left = held.validUntil() - refNow();
        if (left < config.useBudgetMs) {
          const ext = config.extendNearEnd;
          if (!ext || extensions >= ext.times) break;
          // Extend close to the end of the lease, sometimes a little after the client's own deadline.
          extensions++;
          await sleep(left - ext.earlyMs + random() * (ext.earlyMs + ext.lateMs));
          history.write({ type: 'ext.inv', w, grant, ref: refNow() });
          try {
            const r = await held.extend(held.leaseMs);
            history.write({ type: 'ext.ok', w, grant, ref: refNow(), sendRef: r.sendRef, validUntil: r.validUntil, leaseMs: held.leaseMs });
          } catch (error) {
            const code = holdfastCodeOf(error);
            history.write({ type: code === 'LOCK_NOT_HELD' ? 'ext.fail' : 'ext.info', w, grant, ref: refNow(), code });
            break;
          }
          continue;
        }
        i++;
        history.write({ type: 'use.inv', w, grant, ref: refNow(), token: held.token });
        if ((config.permits ?? 1) > 1) {
          // a semaphore's holders run at once by design: the use is the time it holds, with no oracle to race on
          await sleep(config.workMs);
          history.write({ type: 'use.ok', w, grant, ref: refNow(), token: held.token, accepted: false });
          continue;
        }
        try {
          const value = await oracle.read(lock, held.token, grant);
          const shadow = await oracle.shadowRead(lock);
          await sleep(config.workMs);
          // The check a careful user makes; a pause right after it still lets a stale write through.
          if (held.signal.aborted) {
            history.write({ type: 'use.fail', w, grant, ref: refNow(), code: 'LOCK_LOST' });
            break;
          }
          const accepted = value !== null && (await oracle.write(lock, held.token, grant, value + 1));
          await oracle.shadowWrite(lock, held.token, grant, shadow + 1);
          history.write({ type: 'use.ok', w, grant, ref: refNow(), token: held.token, accepted });
        } catch (error) {
          history.write({ type: 'use.fail', w, grant, ref: refNow(), code: codeOf(error) });
        }
      }

      history.write({ type: 'rel.inv', w, grant, ref: refNow() });
      hooks.current = undefined;
      try {
        await held.release();
        history.write({ type: 'rel.ok', w, grant, ref: refNow() });
      } catch (error) {
        const code = holdfastCodeOf(error);
        history.write({ type: code === 'LOCK_NOT_HELD' ? 'rel.fail' : 'rel.info', w, grant, ref: refNow(), code });
      }
      held.signal.removeEventListener('abort', onLost);
      send({ t: 'free', grant });
      await sleep(random() * config.thinkMs);
    }
  };
  await Promise.all(ids.map((w, i) => run(w, i === 0 ? rng(config.seed) : rng(config.seed * 31 + i))));

  clearInterval(tick);
  await backend.close();
  oracleRedis.disconnect();
  history.close();
  send({ t: 'done' });
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error('worker failed:', error);
  process.exit(1);
});
