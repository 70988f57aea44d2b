/**
 * 1,000 elections × 3 candidates in one process (three clients, one per candidate of each election): leadership
 * settles to exactly one leader per election, hands over on each resignation, terms grow per election; memory stays
 * bounded and, once everyone resigned, no key per election is left in Redis (only the shared per-slot counters), no
 * hold and no subscription in the clients.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Holdfast, Leadership } from '../../src/index.js';
import { adapters, makeHoldfast } from '../support/clients.js';
import { RedisServer } from '../support/redis-server.js';
import { sleep } from '../support/suite.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const ELECTIONS = 1000;
const CANDIDATES = 3;

function heapMb(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 2 ** 20;
}

void describe('Election at scale', () => {
  let server: RedisServer;
  const opened: Awaited<ReturnType<typeof makeHoldfast>>[] = [];
  let clients: Holdfast[] = [];

  before(async () => {
    server = await RedisServer.start();
    for (let i = 0; i < CANDIDATES; i++) opened.push(await makeHoldfast(adapters[0]!, server.url, { prefix: 'scale:', commandTimeout: 10_000 })); // 3,000 campaigns queue on three connections: on a busy machine a reply can take over a second
    clients = opened.map((o) => o.holdfast);
  });
  after(async () => {
    await Promise.all(opened.map((o) => o.dispose()));
    await server.stop();
  });

  void it(`${ELECTIONS} elections × ${CANDIDATES} candidates settle, hand over, and leave nothing behind`, { timeout: 60_000 }, async () => {
    const baseline = heapMb();
    const won: Leadership[][] = Array.from({ length: ELECTIONS }, () => []);
    let count = 0;
    const t0 = performance.now();
    const campaigns = clients.flatMap((client) =>
      Array.from({ length: ELECTIONS }, (_, i) =>
        client
          .election(`e${i}`, { label: `c${clients.indexOf(client)}` })
          .campaign({ lease: 10_000, timeout: 50_000 })
          .then((l) => {
            won[i]!.push(l);
            count++;
            return l;
          }),
      ),
    );
    const current = (): Leadership[] => won.map((ls) => ls.at(-1)!);
    const settle = async (expected: number): Promise<number> => {
      const start = performance.now();
      while (count < expected) await sleep(20);
      const ms = performance.now() - start;
      await sleep(200);
      assert.equal(count, expected, 'no election got a second leader meanwhile');
      for (let i = 0; i < ELECTIONS; i++) assert.equal(won[i]!.length, expected / ELECTIONS, `election e${i} has one new leader`);
      // what Redis says agrees: the newest leadership of each election leads
      const leaders = await Promise.all(Array.from({ length: ELECTIONS }, (_, i) => clients[0]!.election(`e${i}`).leader()));
      leaders.forEach((leader, i) => assert.equal(leader?.term, won[i]!.at(-1)!.term));
      return ms;
    };
    const firstMs = await settle(ELECTIONS);
    const firstAt = performance.now() - t0;
    const heapLeading = heapMb();
    // two hand-overs: every leader resigns, the next candidate of each election leads
    const handovers: number[] = [];
    for (let round = 2; round <= CANDIDATES; round++) {
      await Promise.all(current().map((l) => l.resign()));
      handovers.push(await settle(round * ELECTIONS));
    }
    await Promise.all(current().map((l) => l.resign()));
    await Promise.all(campaigns);
    for (const ls of won) {
      for (let k = 1; k < ls.length; k++) assert.ok(ls[k]!.term > ls[k - 1]!.term, 'terms grow per election');
      assert.ok(ls.every((l) => !l.leading));
    }
    // nothing left: no leader key, no candidate list; only the shared fencing counters (at most one per slot)
    const keys = (await clients[0]!.core.command(['KEYS', 'scale:*'])) as string[];
    const other = keys.filter((k) => !/^scale:\{[0-9a-z]+\}:fence$/.test(k));
    assert.deepEqual(other, [], 'no key per election left behind');
    assert.ok(keys.length <= 16384);
    for (const c of clients) assert.equal(c.core.holds.size, 0, 'no hold left in the client');
    await sleep(2500); // the notifier drops a subscription 2 s after its last waiter left
    for (const c of clients) assert.equal(c.core.notifier.channelCount, 0, 'no subscription left');
    won.length = 0;
    campaigns.length = 0;
    const heapAfter = heapMb();
    console.log(
      `# ${ELECTIONS} elections x ${CANDIDATES}: settled in ${firstAt.toFixed(0)} ms (${firstMs.toFixed(0)} ms of waiting), hand-overs ${handovers
        .map((h) => h.toFixed(0))
        .join(' / ')} ms; heap ${baseline.toFixed(1)} MB -> ${heapLeading.toFixed(1)} MB leading -> ${heapAfter.toFixed(1)} MB after; ${keys.length} counters`,
    );
    // bounded: a few KB per candidate while campaigning, and back to about the baseline once all resigned
    assert.ok(heapLeading - baseline < 40, `heap grew ${(heapLeading - baseline).toFixed(1)} MB for ${ELECTIONS * CANDIDATES} candidates`);
    assert.ok(heapAfter - baseline < 10, `heap ${(heapAfter - baseline).toFixed(1)} MB above the baseline after everyone resigned`);
  });
});
