import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { FaultProxy } from '../support/fault-proxy.js';
import { rawCommand, RedisServer } from '../support/redis-server.js';

void describe('FaultProxy', () => {
  let redis: RedisServer;
  let proxy: FaultProxy;
  before(async () => {
    redis = await RedisServer.start();
    proxy = await FaultProxy.start(redis.port);
  });
  after(async () => {
    await proxy.close();
    await redis.stop();
  });

  void test('forwards, and delays replies by the set amount', async () => {
    assert.equal(await rawCommand(proxy.port, 'PING'), '+PONG');
    proxy.delay('down', 150);
    const t0 = performance.now();
    assert.equal(await rawCommand(proxy.port, 'PING'), '+PONG');
    assert.ok(performance.now() - t0 >= 145);
    proxy.heal();
  });

  void test('a black hole swallows requests; healing lets new ones through', async () => {
    proxy.blackhole('up');
    await assert.rejects(rawCommand(proxy.port, 'PING', 300), /no reply/);
    proxy.heal();
    assert.equal(await rawCommand(proxy.port, 'PING'), '+PONG');
  });

  void test('a paused direction holds bytes and delivers them on resume', async () => {
    proxy.pause('down');
    const reply = rawCommand(proxy.port, 'PING', 2000);
    await new Promise((r) => setTimeout(r, 200));
    proxy.pause('down', false);
    assert.equal(await reply, '+PONG');
  });

  void test('cutAfter forwards the request, then cuts before the reply', async () => {
    proxy.cutAfter('SET');
    await assert.rejects(rawCommand(proxy.port, 'SET fp:k 1', 1000));
    assert.equal(await rawCommand(redis.port, 'GET fp:k'), '$1'); // the write landed
    assert.ok(proxy.cuts >= 1);
  });

  void test('refuse resets new connections; cut drops open ones', async () => {
    proxy.refuse();
    await assert.rejects(rawCommand(proxy.port, 'PING', 500));
    proxy.heal();
    proxy.pause('down');
    const pending = rawCommand(proxy.port, 'PING', 2000);
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(proxy.cut(), 1);
    await assert.rejects(pending);
    proxy.heal();
  });
});
