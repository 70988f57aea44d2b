/**
 * The only place Redis key and channel names are built. Every key of one lock name carries the name inside a
 * `{hash tag}`, so that all of them live in one Redis Cluster slot and one script can touch them all.
 *
 * Layout (prefix `holdfast:` by default, lock name `orders:42`):
 *
 * | key                              | type   | TTL                 | written by              |
 * |----------------------------------|--------|---------------------|-------------------------|
 * | `holdfast:{orders:42}:lock`      | string | the lease           | lock: `<holds>:<token>:<owner>` |
 * | `holdfast:{<t>}:fence`           | string | none (a counter)    | every fresh acquisition of a name in slot(t) |
 * | `holdfast:{orders:42}:lock:w`    | zset   | refreshed by waiters| lock: waiters → since when (only while contended) |
| `holdfast:{orders:42}:ch`        | channel| —                   | release publishes here  |
 * | `holdfast:{orders:42}:rel:<id>`  | string | `releaseMarkerTtl`  | release (retry-safety)  |
 * | `holdfast:{orders:42}:fair`      | hash   | the lease / a grant | fair lock scripts       |
 * | `holdfast:{orders:42}:fair:q`    | list   | refreshed by waiters| fair lock: FIFO of owner ids |
 * | `holdfast:{orders:42}:fair:w`    | hash   | refreshed by waiters| fair lock: owner → its client's channel |
 * | `holdfast:{orders:42}:fair:p`    | hash   | refreshed by waiters| fair lock: client channel → alive-until (Redis ms) |
 * | `holdfast:{orders:42}:fair:ch:<client>` | channel | —         | fair lock hand-offs to that client |
 * | `holdfast:{orders:42}:fair:o`    | string | 30 s, refreshed     | fair lock: someone waits for it to be free or listens for releases |
 * | `holdfast:{orders:42}:fair:ev`   | channel| —                   | fair lock releases, while `fair:o` exists |
 * | `holdfast:{nightly}:job`         | hash   | 7 days after a claim| scheduler claim/finish  |
 * | `holdfast:{user:7}:cv`           | string | the value's `ttl`   | getOrLoad fill          |
 * | `holdfast:{user:7}:cl`           | hash   | the load lease      | getOrLoad claim         |
 * | `holdfast:{user:7}:ce`           | hash   | the load lease      | getOrLoad failure       |
 * | `holdfast:{user:7}:cc`           | channel| —                   | fill/failure publish    |
 * | `holdfast:{sku:1}:seg:<i>`       | string | none (stock data)   | segmented stock         |
 * | `holdfast:{orders:42}:rw:w`      | hash   | the writer's lease  | read-write lock: writer |
 * | `holdfast:{orders:42}:rw:r`      | zset   | last reader's lease | readers (owner → expiry)|
 * | `holdfast:{orders:42}:rw:rc`     | hash   | as `rw:r`           | readers' hold counts    |
 * | `holdfast:{orders:42}:rw:ww`     | zset   | last intent         | waiting writers' intents|
 * | `holdfast:{orders:42}:rw:ch`     | channel| —                   | read-write lock wakes   |
 * | `holdfast:{orders:42}:rw:o`      | string | 30 s, refreshed     | read-write lock: someone waits for it to be free or listens for releases |
 * | `holdfast:{orders:42}:rw:ev`     | channel| —                   | read-write lock releases, while `rw:o` exists |
 * | `holdfast:{orders:42}:sem`       | string | none                | semaphore permits       |
 * | `holdfast:{orders:42}:psem`      | string | none                | expirable permits free  |
 * | `holdfast:{orders:42}:psem:l`    | zset   | last lease          | permit id → expiry      |
 * | `holdfast:{orders:42}:psem:n`    | hash   | as `psem:l`         | permit id → permits     |
 * | `holdfast:{orders:42}:qsem:<i>`  | string | the lease           | Redlock semaphore: permit slot i → owner |
 * | `holdfast:{orders:42}:latch`     | string | optional            | count-down latch count  |
 * | `holdfast:{orders:42}:fenced`    | hash   | optional            | fenced value + token    |
 * | `holdfast:{ingest}:elect`        | hash   | the lease           | election: leader `{t, o, l, s}` |
 * | `holdfast:{ingest}:elect:c`      | zset   | refreshed by candidates | election: waiting candidates → alive-until |
 * | `holdfast:{ingest}:elect:ch`     | channel| —                   | election: elected / resigned |
 * | `holdfast:label:{<client fp>}`   | string | 60 s, refreshed     | a client's `label` option, for inspections |
 *
 * Some scripts build a channel from a key they were given instead of receiving it, to keep every request short: the
 * lock's release builds `:ch` from `:lock`, the read-write lock's releases build `rw:ch` and `rw:ev` from `rw:w`, the
 * fair lock builds `fair:ev` and `fair:ch:<client>` from `fair`. Change one of those names and the scripts change with
 * it (test/internal/names.test.ts checks that they agree).
 *
 * Fencing counters are shared, one per Redis Cluster slot: the counter of a name is `<prefix>{<t>}:fence`, where `t`
 * is a short tag chosen (the first that fits, found directly on first use of the slot) so that the counter key lands in the name's own slot. So a
 * prefix never holds more than 16,384 counters however many names it locks, a name's counter moves with its slot
 * in a Cluster migration, and every primitive of a name mints from the same counter: tokens still only grow per
 * name (they grow faster, and are shared by the names of a slot). Per-name counters of an earlier layout
 * (`<prefix>{<name>}:fence`) are carried over once by `Holdfast.migrateFencingCounters()`.
 *
 * @module
 */

/** Redis Cluster slots. */
export const SLOTS = 16384;

const CRC_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let j = 0; j < 8; j++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/** CRC16-XMODEM of the UTF-8 bytes of `s` from `start` to `end` (code units), as Redis Cluster hashes keys. */
function crc16(s: string, start: number, end: number): number {
  let crc = 0;
  for (let i = start; i < end; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) {
      crc = ((crc << 8) & 0xffff) ^ (CRC_TABLE[((crc >> 8) ^ c) & 0xff] as number);
      continue;
    }
    // not ASCII: hash the rest by its UTF-8 bytes
    for (const byte of Buffer.from(s.slice(i, end), 'utf8')) crc = ((crc << 8) & 0xffff) ^ (CRC_TABLE[((crc >> 8) ^ byte) & 0xff] as number);
    return crc;
  }
  return crc;
}

/** The Redis Cluster slot of `key`: its hash tag (between the first `{` and the next `}`) if not empty, else all of it. */
export function slotOf(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return crc16(key, open + 1, close) % SLOTS;
  }
  return crc16(key, 0, key.length) % SLOTS;
}

/*
 * The counter tags. The counter of slot `s` is `<prefix>{<t>}:fence` with `t` the first of `0`, `1`, … (base 36)
 * whose key lands in `s`. The hash tag of that key is `t` alone when the prefix has no `{`; when the prefix has a `{`
 * that it does not close, it is `<lead>t`, the lead being the prefix after its first `{` and then the `{` before `t`
 * (prefix `a{`: `{t`; prefix `x{y:`: `y:{t`). Walking the tags one by one (up to ~170,000 CRCs for a slot) stalled the
 * event loop for tens of ms per new slot, so the tag is found directly. CRC16-XMODEM starts at zero and has no final
 * xor, so it is linear: crc(a‖b) = crc(a followed by |b| zero bytes) ⊕ crc(b). So for a tag of L digits,
 * crc(lead‖t) = crc(lead‖L zero bytes) ⊕ crc(t): `lead‖t` lands in `s` exactly when `t` alone lands in `s` ⊕ the low
 * bits of crc(lead‖L zero bytes) — one target per length, the same for every tag of that length (and `s` itself when
 * the lead is empty). A tag of 3 or 4 digits is a 2-digit head and a 1- or 2-digit tail, so for each head, in order,
 * one table lookup says which tails (if any) reach the target: about 1,300 cheap steps for a slot. The tags of 4
 * digits alone reach every one of the 16,384 targets (test/internal/names.test.ts counts them), so whatever the lead,
 * every slot has a tag of at most 4 digits and the search needs no fallback. The result is the tag the walk finds
 * (shorter tags first, then in numeric order; test/internal/names.test.ts compares all 16,384 slots for several
 * prefixes), and it depends only on the lead: it is found once per slot for every prefix of that lead.
 */

const DIGITS = '0123456789abcdefghijklmnopqrstuvwxyz';
/** crc after one more byte. */
const push = (crc: number, byte: number): number => ((crc << 8) & 0xffff) ^ (CRC_TABLE[((crc >> 8) ^ byte) & 0xff] as number);
const LOW = SLOTS - 1; // SLOTS is a power of two: a slot is the low 14 bits of the CRC

/** The search tables, built on first use (a few thousand steps, well under a millisecond). */
interface TagIndex {
  /** CRC of each 1-digit string, by digit. */
  one: Uint16Array;
  /** CRC of each 2-digit string `d1 d2` (a leading 0 allowed: a tail), at d1 × 36 + d2. */
  two: Uint16Array;
  /** Slot → the smallest digit whose 1-digit string lands there, or -1. */
  oneBySlot: Int8Array;
  /** Slot → the smallest 2-digit string (as above, leading 0 allowed) that lands there, or -1. */
  twoBySlot: Int16Array;
}
let tagIndex: TagIndex | undefined;

function buildTagIndex(): TagIndex {
  const one = new Uint16Array(36);
  const two = new Uint16Array(36 * 36);
  const oneBySlot = new Int8Array(SLOTS).fill(-1);
  const twoBySlot = new Int16Array(SLOTS).fill(-1);
  for (let a = 0; a < 36; a++) {
    one[a] = push(0, DIGITS.charCodeAt(a));
    if (oneBySlot[(one[a] as number) & LOW] === -1) oneBySlot[(one[a] as number) & LOW] = a;
  }
  for (let i = 0; i < 36 * 36; i++) {
    two[i] = push(one[Math.floor(i / 36)] as number, DIGITS.charCodeAt(i % 36));
    if (twoBySlot[(two[i] as number) & LOW] === -1) twoBySlot[(two[i] as number) & LOW] = i;
  }
  return { one, two, oneBySlot, twoBySlot };
}

/** The counter tags of one lead (see above). */
interface Tags {
  /** By tag length L - 1 (L = 1 … 4): the low bits of crc(lead‖L zero bytes), what turns a slot into its target. */
  masks: readonly number[];
  /** Slot → its tag (filled per slot, on first use). */
  bySlot: (string | undefined)[];
}

/** Lead → its tags; the empty lead is shared by every prefix without a `{`. */
const tagsByLead = new Map<string, Tags>();

function tagsOf(lead: string): Tags {
  let tags = tagsByLead.get(lead);
  if (!tags) {
    const masks: number[] = [];
    for (let crc = crc16(lead, 0, lead.length), length = 1; length <= 4; length++) masks.push((crc = push(crc, 0)) & LOW);
    tagsByLead.set(lead, (tags = { masks, bySlot: new Array<string | undefined>(SLOTS) }));
  }
  return tags;
}

/** The first base-36 tag `t` (in the order 0, 1, …) whose hash tag `<lead>t` lands in `slot`. */
function tagOfSlot(tags: Tags, slot: number): string {
  const found = tags.bySlot[slot];
  if (found !== undefined) return found;
  const x = (tagIndex ??= buildTagIndex());
  // where crc(t) must land for `<lead>t` to land in the slot, for a tag of 1, 2, 3, 4 digits
  const [one, two, three, four] = tags.masks.map((mask) => slot ^ mask) as [number, number, number, number];
  const pair = (i: number): string => DIGITS.charAt(Math.floor(i / 36)) + DIGITS.charAt(i % 36);
  let tag: string | undefined;
  // 1 digit; then 2 digits (no leading 0)
  if (x.oneBySlot[one] !== -1) tag = DIGITS.charAt(x.oneBySlot[one] as number);
  for (let i = 36; tag === undefined && i < 36 * 36; i++) if (((x.two[i] as number) & LOW) === two) tag = pair(i);
  // 3 digits: a 2-digit head (no leading 0) and a 1-digit tail
  for (let h = 36; tag === undefined && h < 36 * 36; h++) {
    const t = x.oneBySlot[(push(x.two[h] as number, 0) ^ three) & LOW] as number;
    if (t !== -1) tag = pair(h) + DIGITS.charAt(t);
  }
  // 4 digits: a 2-digit head (no leading 0) and a 2-digit tail; these alone reach every target (see above)
  for (let h = 36; tag === undefined && h < 36 * 36; h++) {
    const t = x.twoBySlot[(push(push(x.two[h] as number, 0), 0) ^ four) & LOW] as number;
    if (t !== -1) tag = pair(h) + pair(t);
  }
  if (tag === undefined) throw new Error(`holdfast: no fencing counter tag for slot ${slot}`);
  tags.bySlot[slot] = tag;
  return tag;
}

/** One prefix's fencing counters. */
interface Counters {
  /** The tags of its lead; `undefined` when the prefix closes its own hash tag, which then decides every slot. */
  tags: Tags | undefined;
  /** Slot → the counter key of that slot (filled per slot, on first use). */
  keys: (string | undefined)[];
}

/** Per prefix: its counters, shared by its `Keys`. */
const countersByPrefix = new Map<string, Counters>();

function countersOf(prefix: string): Counters {
  let counters = countersByPrefix.get(prefix);
  if (!counters) {
    const open = prefix.indexOf('{');
    // no `{`: the hash tag is the tag alone; an unclosed `{`: the tag with the lead before it; closed: none
    const lead = open < 0 ? '' : prefix.indexOf('}', open + 1) < 0 ? `${prefix.slice(open + 1)}{` : undefined;
    countersByPrefix.set(prefix, (counters = { tags: lead === undefined ? undefined : tagsOf(lead), keys: new Array<string | undefined>(SLOTS) }));
  }
  return counters;
}

/**
 * The fencing counter key of `slot` under a prefix. Under a prefix that closes its own hash tag, that tag decides the
 * slot of every key: all names share one slot and one counter, at the first tag (and no other slot has one; a prefix
 * whose first `{` is closed right away, an empty hash tag, is refused by `checkPrefix` and gets none either).
 */
function counterKey(prefix: string, counters: Counters, slot: number): string | undefined {
  const known = counters.keys[slot];
  if (known !== undefined) return known;
  let key: string | undefined;
  if (counters.tags !== undefined) {
    key = `${prefix}{${tagOfSlot(counters.tags, slot)}}:fence`;
  } else {
    const only = `${prefix}{0}:fence`;
    if (slotOf(only) === slot) key = only;
  }
  counters.keys[slot] = key;
  return key;
}

/** Builds key names for one prefix. */
export class Keys {
  /** This prefix's fencing counters, looked up once. */
  #counters: Counters | undefined;

  constructor(readonly prefix: string) {}

  /** `{name}` with the prefix: the part every key of this name starts with. */
  base(name: string): string {
    return `${this.prefix}{${name}}`;
  }
  /** The plain / reentrant lock: a string `<hold count>:<fencing token>:<owner id>` whose TTL is the lease. */
  lock(name: string): string {
    return `${this.base(name)}:lock`;
  }
  /**
   * The fencing-token counter of this name: shared by every exclusive primitive of the name and by every other name
   * of its Redis Cluster slot (see the module's notes), in the name's slot.
   */
  fence(name: string): string {
    // every key of a name is in the slot of its `{…}` part (or of the prefix's own hash tag): the base decides it
    const key = counterKey(this.prefix, (this.#counters ??= countersOf(this.prefix)), slotOf(this.base(name)));
    if (key === undefined) throw new Error(`holdfast: no fencing counter key for the slot of "${name}" under prefix "${this.prefix}"`);
    return key;
  }
  /** A name's counter in the earlier per-name layout, read only by `Holdfast.migrateFencingCounters()`. */
  legacyFence(name: string): string {
    return `${this.base(name)}:fence`;
  }
  /** The plain lock's waiters of every client: owner id → when it first found the lock taken (a zset, short TTL). */
  lockWaiters(name: string): string {
    return `${this.base(name)}:lock:w`;
  }
  /** The pub/sub channel that release messages go to. */
  channel(name: string): string {
    return `${this.base(name)}:ch`;
  }
  /** The marker that makes one release request idempotent. */
  releaseMarker(name: string, requestId: string): string {
    return `${this.base(name)}:rel:${requestId}`;
  }
  /** The fair lock's hash (owner, hold count, token; while granted but not yet claimed also the grantee's channel). */
  fairLock(name: string): string {
    return `${this.base(name)}:fair`;
  }
  /** The fair lock's FIFO queue of waiting owner ids. */
  fairQueue(name: string): string {
    return `${this.base(name)}:fair:q`;
  }
  /** The fair lock's waiters: owner id → the channel of the client it waits in. */
  fairWaiters(name: string): string {
    return `${this.base(name)}:fair:w`;
  }
  /** The fair lock's waiting clients: client channel → the Redis time (ms) until which that client counts as alive. */
  fairClients(name: string): string {
    return `${this.base(name)}:fair:p`;
  }
  /** The channel on which one client's fair-lock waiters of this name hear that the lock was handed to them. */
  fairChannel(name: string, clientId: string): string {
    return `${this.base(name)}:fair:ch:${clientId}`;
  }
  /** Fair lock: present while someone observes its events (see the table). */
  fairObserved(name: string): string {
    return `${this.base(name)}:fair:o`;
  }
  /** Fair lock: its events channel. */
  fairEvents(name: string): string {
    return `${this.base(name)}:fair:ev`;
  }
  /** A scheduled job's record: last claimed tick, running owner, locked-until (Redis time). */
  job(name: string): string {
    return `${this.base(name)}:job`;
  }
  /** A cached value written by `getOrLoad`. */
  cacheValue(key: string): string {
    return `${this.base(key)}:cv`;
  }
  /** The lock of the one load in progress for a cache key. */
  cacheLoad(key: string): string {
    return `${this.base(key)}:cl`;
  }
  /** The last failed load of a cache key, for the waiters of that load only. */
  cacheError(key: string): string {
    return `${this.base(key)}:ce`;
  }
  /** Where a finished (or failed) load of a cache key is announced. */
  cacheChannel(key: string): string {
    return `${this.base(key)}:cc`;
  }
  /** Segment `index` of a segmented stock (all segments share the `{name}` tag: one slot, one script sees all). */
  stockSegment(name: string, index: number): string {
    return `${this.base(name)}:seg:${index}`;
  }

  /** Read-write lock: the writer's hash `{o, c, t}` (same layout as the lock's). */
  rwWriter(name: string): string {
    return `${this.base(name)}:rw:w`;
  }
  /** Read-write lock: readers, a zset of owner → lease expiry (Redis time, ms). */
  rwReaders(name: string): string {
    return `${this.base(name)}:rw:r`;
  }
  /** Read-write lock: readers' hold counts, owner → count. */
  rwReadCounts(name: string): string {
    return `${this.base(name)}:rw:rc`;
  }
  /** Read-write lock: waiting writers' intents, owner → expiry; while one lives, new readers wait. */
  rwIntents(name: string): string {
    return `${this.base(name)}:rw:ww`;
  }
  /** Read-write lock: the channel its releases publish on. */
  rwChannel(name: string): string {
    return `${this.base(name)}:rw:ch`;
  }
  /** Read-write lock: present while someone observes its events. */
  rwObserved(name: string): string {
    return `${this.base(name)}:rw:o`;
  }
  /** Read-write lock: its events channel. */
  rwEvents(name: string): string {
    return `${this.base(name)}:rw:ev`;
  }
  /** Counting semaphore: the number of free permits. */
  semaphore(name: string): string {
    return `${this.base(name)}:sem`;
  }
  /** Counting semaphore: the channel releases publish on. */
  semaphoreChannel(name: string): string {
    return `${this.base(name)}:sem:ch`;
  }
  /** Permit-expirable semaphore: the number of free permits. */
  permits(name: string): string {
    return `${this.base(name)}:psem`;
  }
  /** Permit-expirable semaphore: permit id → lease expiry (Redis time, ms). */
  permitLeases(name: string): string {
    return `${this.base(name)}:psem:l`;
  }
  /** Permit-expirable semaphore: permit id → number of permits it holds. */
  permitWeights(name: string): string {
    return `${this.base(name)}:psem:n`;
  }
  /** Permit-expirable semaphore: the channel releases and reclaims publish on. */
  permitsChannel(name: string): string {
    return `${this.base(name)}:psem:ch`;
  }
  /** Redlock semaphore: permit slot `slot` (0-based), holding its owner id with the lease as its TTL. */
  redlockPermit(name: string, slot: number): string {
    return `${this.base(name)}:qsem:${slot}`;
  }
  /** Count-down latch: the count. */
  latch(name: string): string {
    return `${this.base(name)}:latch`;
  }
  /** Count-down latch: the channel the last count-down publishes on. */
  latchChannel(name: string): string {
    return `${this.base(name)}:latch:ch`;
  }
  /** Fenced resource: a hash `{v = value, t = last accepted token}`. */
  fenced(name: string): string {
    return `${this.base(name)}:fenced`;
  }
  /**
   * The label of one client (its `label` option), by the fingerprint of its client id: how inspections in other
   * processes name a holder. Outside the `{name}` keys, so that no listing takes it for a primitive.
   */
  clientLabel(clientFingerprint: string): string {
    return `${this.prefix}label:{${clientFingerprint}}`;
  }
  /** Election: the leader, a hash `{t = term, o = owner id, l = label, s = since}` whose TTL is the lease. */
  election(name: string): string {
    return `${this.base(name)}:elect`;
  }
  /** Election: the candidates that wait, a zset `"<owner id>|<label>"` → until when alive (Redis ms). */
  electionCandidates(name: string): string {
    return `${this.base(name)}:elect:c`;
  }
  /** Election: the channel every election and resignation publishes on. */
  electionChannel(name: string): string {
    return `${this.base(name)}:elect:ch`;
  }
  /** The lock name back from a key of this prefix, or `undefined` if the key is not one of ours. */
  nameOf(key: string): string | undefined {
    if (!key.startsWith(this.prefix + '{')) return undefined;
    const end = key.lastIndexOf('}:');
    return end < 0 ? undefined : key.slice(this.prefix.length + 1, end);
  }
}
