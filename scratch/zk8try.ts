import { ZkCluster } from '../test/support/zookeeper.ts';
let t = performance.now();
const s = await ZkCluster.start();
console.log('standalone', Math.round(performance.now() - t), s.connectionString);
t = performance.now();
const e = await ZkCluster.start({ size: 3 });
console.log('ensemble', Math.round(performance.now() - t), e.connectionString, (await e.leader())?.id);
const l = (await e.leader())!;
t = performance.now();
await l.kill();
await e.waitReady().catch(() => {});
for (;;) { const x = await e.leader(); if (x) { console.log('new leader', x.id, Math.round(performance.now() - t)); break; } await new Promise(r => setTimeout(r, 50)); }
t = performance.now();
l.launch(); await e.waitReady(); console.log('rejoin', Math.round(performance.now() - t));
await s.stop(); await e.stop();
