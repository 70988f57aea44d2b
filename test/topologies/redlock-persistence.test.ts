/**
 * The defence against Redlock's restart hazard: with `appendonly yes` + `appendfsync always`, a node killed with -9 and
 * restarted at once comes back with the lock key and the fencing counter, so no second grant and no smaller token.
 * (Its counterpart without persistence is the hazard self-test in test/primitives/redlock.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { AcquireTimeoutError, Redlock, type QuorumNotReachedError } from '../../src/index.js';
import { adapters } from '../support/clients.js';
import { RedisServer, rawCommand } from '../support/redis-server.js';

const adapter = adapters[0]!;
let servers: RedisServer[] = [];
const clients: unknown[] = [];

before(async () => {
  servers = await Promise.all(
    Array.from({ length: 5 }, () => RedisServer.start({ args: ['--appendonly', 'yes', '--appendfsync', 'always'] })),
  );
  for (const s of servers) clients.push(await adapter.connect(s.url));
});
after(async () => {
  await Promise.all(clients.map((c) => adapter.disconnect(c)));
  await Promise.all(servers.map((s) => s.stop()));
});

void it('with fsync-always AOF, a node restarted at once keeps the lock: no double grant, tokens still grow', async () => {
  const prefix = 'rlp:';
  const a = new Redlock({ redis: clients, prefix, retryDelay: 20, retryJitter: 20 });
  const b = new Redlock({ redis: clients, prefix, retryDelay: 20, retryJitter: 20, retryCount: Infinity });
  try {
    await rawCommand(servers[0]!.port, `SET ${a.keys.fence('h')} 50`);
    await rawCommand(servers[1]!.port, `SET ${a.keys.fence('h')} 50`);
    await Promise.all([servers[3]!.kill(), servers[4]!.kill()]);
    let first;
    try {
      first = await a.lock('h').acquire({ lease: 10_000 }); // nodes 0, 1, 2
    } finally {
      await Promise.all([servers[3]!.launch(), servers[4]!.launch()]);
    }
    await servers[2]!.restart(); // kill -9 and straight back: the AOF replays the lock and the raised counter
    // Retry for a while (the clients reconnect to the restarted nodes meanwhile): never granted, and in the end every
    // node answers, node 2 with "busy" — it did come back with the lock.
    const refused = await b
      .lock('h')
      .acquire({ lease: 10_000, timeout: 2000 })
      .then(
        () => assert.fail('a second grant'),
        (e: unknown) => e,
      );
    assert.ok(refused instanceof AcquireTimeoutError, String(refused));
    const last = refused.cause as QuorumNotReachedError;
    assert.deepEqual(
      last.nodes.map((n) => n.status),
      ['busy', 'busy', 'busy', 'acquired', 'acquired'],
    );
    await first.release();
    const next = await b.lock('h').acquire({ lease: 10_000 });
    assert.ok(next.token > first.token, `token ${next.token} after ${first.token}`);
    await next.release();
  } finally {
    await a.close();
    await b.close();
  }
});
