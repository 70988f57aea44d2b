/**
 * The holdfast Lock independent-keys loop alone (64 cycles in flight on one ioredis connection, a fresh name each,
 * watchdog lease), for a CPU profile:
 *
 *   npm run build
 *   node --cpu-prof --cpu-prof-dir=results/tmp --import tsx bench/profile-throughput.ts [--seconds=5] [--in-flight=64] [--lease] [--impl=floor] [--client=node-redis]
 *   npx tsx bench/top-frames.ts results/tmp/CPU.<…>.0.<n>.cpuprofile
 *
 * It runs the built bundle (dist/, through bench/holdfast.ts), as users do. `--lease`
 * takes a fixed 30 s lease instead of the watchdog; `--impl` profiles another row of the
 * independent-keys table instead (e.g. `floor`, `holdfast FairLock`); `--client=node-redis` runs it on node-redis. Starts its own redis-server; prints cycles/s.
 */
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { RedisServer } from '../test/support/redis-server.js';
import { connect, implementations, prepared, segment } from './independent-keys.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    'in-flight': { type: 'string', default: '64' },
    lease: { type: 'boolean', default: false },
    impl: { type: 'string' },
    client: { type: 'string', default: 'ioredis' },
  },
});
const id = values.impl ?? (values.lease ? 'holdfast Lock, lease' : 'holdfast Lock, watchdog');
const implementation = implementations.find((i) => i.id === id);
if (!implementation) throw new Error(`no implementation ${id}`);
const inFlight = Number(values['in-flight']);

const server = await RedisServer.start();
const probe = new Redis(server.url);
const kind = values.client === 'node-redis' ? 'node-redis' : 'ioredis';
const c = await connect(kind, server.url);
try {
  const { cycle } = prepared(await implementation.setup(c, inFlight));
  await segment(cycle, inFlight, 300, probe); // warm-up: script loaded, JIT
  const s = await segment(cycle, inFlight, Number(values.seconds) * 1000, probe);
  console.log(
    `${id}, ${inFlight} in flight, ${kind}: ${s.cyclesPerSec.toFixed(0)} cycles/s, client CPU ${s.clientCpuUs.toFixed(1)} µs/cycle, ` +
      `Redis CPU ${s.redisCpuUs.toFixed(1)} µs/cycle, ${s.errors} errors`,
  );
} finally {
  await c.close();
  probe.disconnect();
  await server.stop();
}
