import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachAdapter, sleep } from '../support/suite.js';
import { AcquireTimeoutError, LoadFailedError, type Codec, type Holdfast } from '../../src/index.js';
import { scripts } from '../../src/lua/scripts.gen.js';

describeEachAdapter('CacheLoader.getOrLoad', (ctx) => {
  let a: Holdfast;
  let b: Holdfast;

  before(async () => {
    // Two clients on two connections with one prefix: two instances of one service.
    const prefix = 'cache-test:';
    a = (await ctx.open({ prefix })).holdfast;
    b = (await ctx.open({ prefix })).holdfast;
  });
  /** `started` resolves once `begin()` is called: a loader calls it, so its load is in progress (its load lock exists). */
  const signalled = (): { started: Promise<void>; begin: () => void } => {
    let begin = (): void => {};
    const started = new Promise<void>((resolve) => (begin = resolve));
    return { started, begin };
  };

  void it('a miss loads and stores for ttl; a hit reads without loading; delete forgets', async () => {
    const cache = a.cacheLoader<{ n: number }>({ ttl: 5000 });
    let loads = 0;
    const loader = async (): Promise<{ n: number }> => ({ n: ++loads });
    assert.deepEqual(await cache.getOrLoad('k1', loader), { n: 1 });
    assert.deepEqual(await cache.getOrLoad('k1', loader), { n: 1 });
    assert.equal(loads, 1);
    assert.deepEqual(await b.cacheLoader({ ttl: 5000 }).get('k1'), { n: 1 }, 'another instance reads it');
    if (a.core.store.kind === 'redis') {
      const pttl = Number(await a.core.command(['PTTL', a.core.keys.cacheValue('k1')]));
      assert.ok(pttl > 4000 && pttl <= 5000, `ttl kept: ${pttl}`);
    }
    // on every store: a value is there for its ttl, and gone after it
    assert.deepEqual(await cache.getOrLoad('k1-short', () => ({ n: 0 }), { ttl: 300 }), { n: 0 });
    assert.deepEqual(await cache.get('k1-short'), { n: 0 });
    await sleep(400);
    assert.equal(await cache.get('k1-short'), undefined, 'gone after its ttl');
    assert.equal(await cache.delete('k1'), true);
    assert.equal(await cache.get('k1'), undefined);
    assert.deepEqual(await cache.getOrLoad('k1', loader), { n: 2 });
    await cache.set('k1', { n: 99 });
    assert.deepEqual(await cache.getOrLoad('k1', loader), { n: 99 });
  });

  void it('30 concurrent calls from two instances run the loader once and all get its value', async () => {
    let loads = 0;
    const loader = async (): Promise<string> => {
      loads++;
      await sleep(150);
      return 'from-db';
    };
    const calls = Array.from({ length: 30 }, (_, i) => (i % 2 ? a : b).getOrLoad('k2', loader, { ttl: 5000 }));
    assert.deepEqual(await Promise.all(calls), Array(30).fill('from-db'));
    assert.equal(loads, 1);
  });

  void it('a loader error reaches the waiters as LoadFailedError and is not cached', async () => {
    let loads = 0;
    const failing = async (): Promise<string> => {
      loads++;
      await sleep(150);
      throw Object.assign(new Error('db down'), { code: 'ECONNREFUSED' });
    };
    const calls = Array.from({ length: 6 }, (_, i) => (i % 2 ? a : b).getOrLoad('k3', failing, { ttl: 5000 }));
    const settled = await Promise.allSettled(calls);
    assert.equal(loads, 1);
    const reasons = settled.map((s) => (s.status === 'rejected' ? (s.reason as Error) : undefined));
    const own = reasons.filter((r) => r && !(r instanceof LoadFailedError));
    const remote = reasons.filter((r): r is LoadFailedError => r instanceof LoadFailedError);
    assert.equal(own.length, 1, 'the loading caller gets its own error');
    assert.equal(own[0]?.message, 'db down');
    assert.equal(remote.length, 5);
    for (const r of remote) {
      assert.equal(r.code, 'LOAD_FAILED');
      assert.deepEqual(r.remote, { name: 'Error', message: 'db down', code: 'ECONNREFUSED' });
    }
    // Not cached: the next call loads again.
    assert.equal(await a.getOrLoad('k3', () => 'recovered', { ttl: 5000 }), 'recovered');
    assert.equal(loads, 1);
  });

  void it('errorTtl caches a failure for that long', async () => {
    let loads = 0;
    const failing = (): string => {
      loads++;
      throw new TypeError('bad row');
    };
    await assert.rejects(a.getOrLoad('k4', failing, { ttl: 5000, errorTtl: 400 }), TypeError);
    await assert.rejects(b.getOrLoad('k4', failing, { ttl: 5000, errorTtl: 400 }), (e: unknown) => e instanceof LoadFailedError && e.remote.name === 'TypeError');
    assert.equal(loads, 1);
    await sleep(450);
    assert.equal(await b.getOrLoad('k4', () => 'ok', { ttl: 5000 }), 'ok');
  });

  void it('a value the codec cannot encode fails the load for everyone instead of hanging', async () => {
    const slowUndefined = async (): Promise<unknown> => {
      await sleep(100);
      return undefined;
    };
    const settled = await Promise.allSettled([a.getOrLoad('k5', slowUndefined, { ttl: 5000 }), b.getOrLoad('k5', slowUndefined, { ttl: 5000 })]);
    const errors = settled.map((s) => (s.status === 'rejected' ? (s.reason as Error) : undefined));
    assert.ok(errors.some((e) => e instanceof TypeError));
    assert.ok(errors.every((e) => e instanceof TypeError || e instanceof LoadFailedError));
  });

  void it('uses a pluggable codec', async () => {
    const dateCodec: Codec<Date> = { encode: (d) => String(d.getTime()), decode: (t) => new Date(Number(t)) };
    const cache = a.cacheLoader({ codec: dateCodec, ttl: 5000 });
    const when = new Date(1_700_000_000_000);
    assert.equal((await cache.getOrLoad('k6', () => when)).getTime(), when.getTime());
    const again = await b.cacheLoader({ codec: dateCodec, ttl: 5000 }).getOrLoad('k6', () => new Date(0));
    assert.ok(again instanceof Date);
    assert.equal(again.getTime(), when.getTime());
    assert.equal(await a.core.run(scripts['cache/get'], [a.core.keys.cacheValue('k6')], []), 'v1700000000000', 'stored as the codec encodes it');
  });

  void it('a waiter gives up after its timeout; a load left by a crashed instance is taken over after its lease', async () => {
    const loading = signalled();
    const slow = a.getOrLoad(
      'k7',
      async () => {
        loading.begin();
        await sleep(1500);
        return 'slow';
      },
      { ttl: 5000 },
    );
    await loading.started;
    await assert.rejects(b.getOrLoad('k7', () => 'never', { ttl: 5000, timeout: 400 }), AcquireTimeoutError);
    await assert.rejects(b.getOrLoad('k7', () => 'never', { ttl: 5000, timeout: 0 }), AcquireTimeoutError);
    assert.equal(await slow, 'slow');

    // A load lock whose owner died (it claimed the load with a 400 ms lease, then crashed): it lapses within its
    // lease, then a waiter loads.
    const k8 = [a.core.keys.cacheValue('k8'), a.core.keys.cacheLoad('k8'), a.core.keys.cacheError('k8')];
    assert.deepEqual(await a.core.run(scripts['cache/claim'], k8, ['crashed-instance', 400, '']), [1]);
    const started = performance.now();
    assert.equal(await b.getOrLoad('k8', () => 'taken over', { ttl: 5000 }), 'taken over');
    const waited = performance.now() - started;
    assert.ok(waited >= 300 && waited < 2000, `waited for the lapse: ${Math.round(waited)} ms`);
  });

  void it('a loader slower than the load lease keeps its lock renewed: nobody else loads meanwhile', async () => {
    let loads = 0;
    const slow = async (): Promise<string> => {
      loads++;
      await sleep(900);
      return 'slow but single';
    };
    const results = await Promise.all([
      a.cacheLoader({ ttl: 5000, lease: 300 }).getOrLoad('k10', slow),
      b.cacheLoader({ ttl: 5000, lease: 300 }).getOrLoad('k10', slow),
    ]);
    assert.deepEqual(results, ['slow but single', 'slow but single']);
    assert.equal(loads, 1);
  });

  void it('passes an abort signal to the loader and aborts waiting', async () => {
    const controller = new AbortController();
    const started = signalled();
    const loading = a.getOrLoad(
      'k9',
      ({ signal }) =>
        new Promise<string>((_, reject) => {
          started.begin();
          signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
        }),
      { ttl: 5000, signal: controller.signal },
    );
    await started.started;
    const waiter = new AbortController();
    const waiting = b.getOrLoad('k9', () => 'x', { ttl: 5000, signal: waiter.signal });
    await sleep(50);
    waiter.abort(new Error('caller gave up'));
    await assert.rejects(waiting, /caller gave up/);
    controller.abort(new Error('shutdown'));
    await assert.rejects(loading, /shutdown/);
  });

  void it('rejects bad arguments before touching Redis', async () => {
    const cache = a.cacheLoader();
    await assert.rejects(cache.getOrLoad('k', () => 1), TypeError, 'ttl required');
    await assert.rejects(cache.getOrLoad('', () => 1, { ttl: 10 }), RangeError);
    await assert.rejects(cache.getOrLoad('k', 1 as never, { ttl: 10 }), TypeError);
    await assert.rejects(cache.getOrLoad('k', () => 1, { ttl: 0 }), RangeError);
    await assert.rejects(cache.getOrLoad('k', () => 1, { ttl: 10, errorTTL: 5 } as never), TypeError);
    await assert.rejects(cache.getOrLoad('k', () => 1, { ttl: 10, signal: {} as never }), TypeError);
    assert.throws(() => a.cacheLoader({ codec: {} as never }), TypeError);
    assert.throws(() => a.cacheLoader({ ttl: -1 }), RangeError);
    assert.throws(() => a.cacheLoader({ lease: 5 }), RangeError);
  });
});
