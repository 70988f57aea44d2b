/**
 * Name rules: an accepted name is well-formed Unicode and never breaks the Redis Cluster hash tag, so two different
 * names never share a key and all keys of one name share one slot. And `null` is never "the default".
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { Holdfast, MAX_NAME_BYTES, Redlock } from '../../src/index.js';
import { Keys } from '../../src/keys.js';
import { checkName } from '../../src/internal/validate.js';

/** CRC16-XMODEM, as Redis Cluster computes it. */
function crc16(data: Buffer): number {
  let crc = 0;
  for (const byte of data) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The Cluster slot of a key: the hash tag between the first `{` and the next `}` if non-empty, else the whole key. */
function slotOf(key: string): number {
  const bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open >= 0) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(bytes.subarray(open + 1, close)) % 16384;
  }
  return crc16(bytes) % 16384;
}

/** Every key (and channel) a name can have, by the key builders' names. */
function keysOf(keys: Keys, name: string): string[] {
  // clientLabel is a client's key, not a name's (it takes a client fingerprint)
  const builders = Object.getOwnPropertyNames(Keys.prototype).filter((m) => !['constructor', 'base', 'nameOf', 'clientLabel'].includes(m));
  return builders.map((m) => (keys as unknown as Record<string, (n: string, extra: string) => string>)[m]!.call(keys, name, 'r7.3'));
}

/** A small deterministic generator (so a failure names its seed). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const PIECES = ['a', 'Z', '{', '}', ':', '{}', '}{', '\0', ' ', 'é', '锁', '😀', '\uD800', '\uDC00', '\uDBFF', '\uFFFD', 'lock', 'fence', 'rel:', '\n'];

function randomName(next: () => number): string {
  if (next() < 0.02) return 'x'.repeat(MAX_NAME_BYTES + 1 - Math.floor(next() * 3));
  const n = 1 + Math.floor(next() * 8);
  let name = '';
  for (let i = 0; i < n; i++) name += PIECES[Math.floor(next() * PIECES.length)];
  return name;
}

describe('Lock names', () => {
  test('lone surrogates and a leading "}" are refused with a RangeError naming the character', () => {
    for (const bad of ['\uD800', '\uDC00', 'a\uD800', 'a\uDBFF', 'x\uDC00y']) {
      assert.throws(() => checkName(bad), (e: unknown) => e instanceof RangeError && /lone surrogate U\+D[89A-F][0-9A-F]{2}/.test(e.message));
    }
    assert.throws(() => checkName('}x'), (e: unknown) => e instanceof RangeError && e.message.includes('"}"'));
    // a well-formed pair and U+FFFD itself are fine, and distinct
    assert.equal(checkName('\uD83D\uDE00'), '😀');
    assert.equal(checkName('\uFFFD'), '\uFFFD');
  });

  test('property: two different accepted names never share a key; all keys of one name share one Cluster slot', () => {
    for (const prefix of ['holdfast:', 'app{x}:', '', 'p}', 'a{']) {
      const keys = new Keys(prefix);
      const owner = new Map<string, string>();
      const next = rng(prefix.length * 7919 + 1);
      let accepted = 0;
      for (let i = 0; i < 4000; i++) {
        const name = randomName(next);
        let ok = true;
        try {
          checkName(name);
        } catch (error) {
          ok = false;
          assert.ok(error instanceof RangeError, `a string name is refused with a RangeError, got ${String(error)}`);
          const why = !name.isWellFormed() || name.startsWith('}') || Buffer.byteLength(name) > MAX_NAME_BYTES;
          assert.ok(why, `refused without a reason: ${JSON.stringify(name)}`);
        }
        if (!ok) continue;
        accepted++;
        const all = keysOf(keys, name);
        const slots = new Set(all.map(slotOf));
        assert.equal(slots.size, 1, `keys of ${JSON.stringify(name)} under prefix ${JSON.stringify(prefix)} span slots ${[...slots].join(', ')}`);
        for (const key of all) {
          if (key.endsWith('}:fence')) continue; // the fencing counter is shared by the names of a slot, by design
          const wire = Buffer.from(key, 'utf8').toString('latin1'); // the key as Redis sees it: its UTF-8 bytes
          const before = owner.get(wire);
          assert.ok(before === undefined || before === name, `${JSON.stringify(name)} and ${JSON.stringify(before)} share the key ${JSON.stringify(key)}`);
          owner.set(wire, name);
        }
      }
      assert.ok(accepted > 1000, `enough names were accepted (${accepted})`);
    }
  });

  test('fencing counters: one per slot, in the slot of every name that mints from it', () => {
    for (const prefix of ['holdfast:', 'app{x}:', 'a{', '']) {
      const keys = new Keys(prefix);
      const counters = new Set<string>();
      const next = rng(42);
      for (let i = 0; i < 20_000; i++) {
        const name = `order:${i}:${Math.floor(next() * 1e9)}`;
        const fence = keys.fence(name);
        assert.equal(slotOf(fence), slotOf(keys.lock(name)), `${name} under ${JSON.stringify(prefix)}`);
        counters.add(fence);
      }
      assert.ok(counters.size <= 16384, `${counters.size} counters`);
      if (prefix === 'app{x}:') assert.equal(counters.size, 1, 'a prefix with its own hash tag: one slot, one counter');
    }
  });

  test('a prefix with an empty hash tag is refused', () => {
    const redis = new Redis({ lazyConnect: true });
    try {
      assert.throws(() => new Holdfast({ redis, prefix: 'a{}:' }), RangeError);
      assert.throws(() => new Holdfast({ redis, prefix: '\uD800' }), RangeError);
      assert.throws(() => new Holdfast({ redis }).lock('\uDC00'), RangeError);
      assert.throws(() => new Holdfast({ redis }).fairLock('}x'), RangeError);
    } finally {
      redis.disconnect();
    }
  });
});

describe('Fencing counter keys', () => {
  // the walk, as the table was once computed per prefix: slot → the first base-36 tag whose key lands there
  const walk = (prefix: string): Map<number, string> => {
    const first = new Map<number, string>();
    for (let n = 0; first.size < 16384 && n < 400_000; n++) {
      const key = `${prefix}{${n.toString(36)}}:fence`;
      const slot = slotOf(key);
      if (!first.has(slot)) first.set(slot, key);
    }
    return first;
  };

  // no `{`; then an unclosed `{`, whose hash tag is `<the prefix after its first {>{<tag>` (`é{` and `p}{`: `{<tag>`,
  // like `a{`; `x{é:` a lead that is not ASCII)
  for (const prefix of ['holdfast:', 'a{', 'x{y:', 'é{', 'p}{', 'x{é:']) {
    test(`prefix ${JSON.stringify(prefix)}: every slot gets the counter key the walk through the tags 0, 1, … finds first`, () => {
      const expected = walk(prefix);
      assert.equal(expected.size, 16384);
      const keys = new Keys(prefix);
      for (const [slot, key] of expected) {
        // a name in that slot: the tag itself (`<prefix>{tag}` has the counter key's hash tag)
        const name = key.slice(prefix.length + 1, -'}:fence'.length);
        assert.equal(slotOf(keys.lock(name)), slot);
        assert.equal(keys.fence(name), key, `slot ${slot}`);
      }
      if (prefix === 'holdfast:') {
        // every prefix without a `{` shares the tags
        const other = new Keys('other:');
        for (const [slot, key] of expected) assert.equal(other.fence(key.slice('holdfast:{'.length, -'}:fence'.length)), key.replace('holdfast:', 'other:'), `slot ${slot}`);
      }
    });
  }

  test('the tags of 4 digits alone reach every slot (from any lead, so every slot has a tag of at most 4 digits)', () => {
    // from a lead P, crc(P‖t) = crc(P‖0000) ⊕ crc(t): one xor, a bijection of the slots, for every 4-digit tag
    const step = (crc: number, byte: number): number => {
      crc ^= byte << 8;
      for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
      return crc;
    };
    const digits = [...'0123456789abcdefghijklmnopqrstuvwxyz'].map((c) => c.charCodeAt(0));
    const reached = new Uint8Array(16384);
    for (const a of digits.slice(1)) {
      const ca = step(0, a);
      for (const b of digits) {
        const cb = step(ca, b);
        for (const c of digits) {
          const cc = step(cb, c);
          for (const d of digits) reached[step(cc, d) % 16384] = 1;
        }
      }
    }
    assert.equal(reached.reduce((sum, r) => sum + r, 0), 16384);
  });

  test('a prefix with its own hash tag: every name in its slot, one counter', () => {
    assert.equal(new Keys('app{x}:').fence('a'), 'app{x}:{0}:fence');
    assert.equal(new Keys('app{x}:').fence('zz'), 'app{x}:{0}:fence');
  });
});

describe('null is never "the default"', () => {
  const redis = new Redis({ lazyConnect: true });
  test('every option of Holdfast, FairLock, Redlock and the acquisitions rejects null with a TypeError', async () => {
    try {
      for (const key of ['watchdogLease', 'watchdogInterval', 'commandTimeout', 'releaseMarkerTtl', 'prefix', 'shardedPubSub', 'replicaSync', 'evictionPolicy']) {
        assert.throws(() => new Holdfast({ redis, [key]: null }), TypeError, `Holdfast ${key}: null`);
      }
      const holdfast = new Holdfast({ redis });
      assert.throws(() => holdfast.fairLock('f', { waiterTimeout: null as unknown as number }), TypeError);
      assert.throws(() => holdfast.readWriteLock('rw', { writerIntent: null as unknown as number }), TypeError);
      for (const key of ['prefix', 'nodeTimeout', 'retryCount', 'retryDelay', 'retryJitter', 'watchdogLease', 'watchdogInterval', 'releaseMarkerTtl']) {
        assert.throws(() => new Redlock({ redis: [redis], [key]: null }), TypeError, `Redlock ${key}: null`);
      }
      for (const key of ['timeout', 'lease', 'signal', 'owner', 'replicaSync']) {
        await assert.rejects(holdfast.lock('l').acquire({ [key]: null }), TypeError, `Lock.acquire ${key}: null`);
      }
      for (const key of ['timeout', 'lease', 'signal', 'owner']) {
        await assert.rejects(holdfast.fairLock('f').tryAcquire({ [key]: null }), TypeError);
        await assert.rejects(holdfast.readWriteLock('rw').writeLock().acquire({ [key]: null }), TypeError);
      }
      await assert.rejects(holdfast.permitExpirableSemaphore('p').acquire(1, { lease: null as unknown as number }), TypeError);
      await assert.rejects(holdfast.semaphore('s').acquire(1, { timeout: null as unknown as number }), TypeError);
    } finally {
      redis.disconnect();
    }
  });
});

describe('Channels the scripts build from key names', () => {
  // The scripts derive these channels from a key they are given (see the notes of src/keys.ts): the same strings
  // here, for prefixes and names of several shapes, so that a change of the layout cannot split the two.
  for (const [prefix, name] of [
    ['holdfast:', 'orders:42'],
    ['', 'x'],
    ['app:{t}:', 'ünïcode name'],
  ] as const) {
    test(`prefix ${JSON.stringify(prefix)}, name ${JSON.stringify(name)}`, () => {
      const k = new Keys(prefix);
      assert.equal(k.lock(name).slice(0, -'lock'.length) + 'ch', k.channel(name), 'lock/release: :lock → :ch');
      assert.equal(k.rwWriter(name).slice(0, -1) + 'ch', k.rwChannel(name), 'includes/rw-channels: rw:w → rw:ch');
      assert.equal(k.rwWriter(name).slice(0, -1) + 'ev', k.rwEvents(name), 'includes/rw-channels: rw:w → rw:ev');
      assert.equal(k.fairLock(name) + ':ev', k.fairEvents(name), 'fair-lock/release: fair → fair:ev');
      assert.equal(k.fairLock(name) + ':ch:client-1', k.fairChannel(name, 'client-1'), 'fair-lock/acquire: fair → fair:ch:<client>');
    });
  }
});
