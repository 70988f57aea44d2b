import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RenewalWatch } from './backends.js';
import { refNow } from './clock.js';

const tick = () => new Promise((r) => setImmediate(r));

void test('a renewal reply that comes back after the next renewal was sent does not report the deadline that one set', async () => {
  let deadline = refNow() + 1000;
  const reported: { sendRef: number; validUntil: number }[] = [];
  const watch = new RenewalWatch(1000, () => deadline, (sendRef, validUntil) => reported.push({ sendRef, validUntil }));
  // A is sent, times out in holdfast (no deadline change), B is sent later and renews; A's late reply comes in with B's
  let replyA!: (v: unknown) => void;
  watch.sent(new Promise((r) => (replyA = r)));
  await new Promise((r) => setTimeout(r, 30));
  const bSent = refNow();
  let replyB!: (v: unknown) => void;
  watch.sent(new Promise((r) => (replyB = r)));
  deadline = bSent + 995; // what B's renewal set
  replyA(1);
  replyB(1);
  await tick();
  await tick();
  assert.equal(reported.length, 1, 'only B reports');
  assert.ok(reported[0]!.sendRef >= bSent);
  assert.equal(reported[0]!.validUntil, deadline);
});

void test('a renewal is reported with the deadline it set; a deadline beyond its send + lease that no later success explains still is', async () => {
  const sent = refNow();
  let deadline = sent + 990;
  const reported: number[] = [];
  const watch = new RenewalWatch(1000, () => deadline, (_, validUntil) => reported.push(validUntil));
  watch.sent(Promise.resolve(1));
  await tick();
  await tick();
  assert.deepEqual(reported, [sent + 990]);
  // an unsound deadline (nothing later explains it) reaches the checker
  deadline = refNow() + 5000;
  watch.sent(Promise.resolve(1));
  watch.sent(Promise.resolve(0)); // sent later but refused: explains nothing, and is never reported
  await tick();
  await tick();
  assert.equal(reported.length, 2);
  assert.equal(reported[1], deadline);
});
