-- The fair lock (src/primitives/fair-lock.ts): the same operations as src/lua/fair-lock/*.lua, with the same keys,
-- arguments and replies. Keys of every operation: k[1] the lock, k[2] the fencing counter (unused: tokens come from
-- one sequence), k[3] the queue, k[4] the waiters (owner → channel; here a column of the queue's rows), k[5] the
-- waiting clients (channel → alive-until), then per operation the events marker and a release marker.
--
-- A lock is one row; `holds` 0 is a grant not yet claimed: a release (or an expiry seen later) handed the lock to
-- the head of the queue, whose client's channel is `channel`. A queue is a header row (its expiry: the TTL the Redis
-- queue keys share, refreshed by every queued attempt and heartbeat) with its waiters, in order, and its waiting
-- clients: both go with the header (a header whose expires_at has passed has no waiters and no clients).

CREATE TABLE IF NOT EXISTS @schema.fair_lock (
  key text PRIMARY KEY,
  owner text NOT NULL,
  holds int NOT NULL,
  token bigint NOT NULL,
  -- while granted, not yet claimed (holds 0): the grantee's client channel (stale, and meaningless, once claimed)
  channel text,
  expires_at bigint NOT NULL
);

-- A fair lock's queue (key: the queue key, k[3]).
CREATE TABLE IF NOT EXISTS @schema.fair_lock_queue (
  key text PRIMARY KEY,
  expires_at bigint NOT NULL
);

-- The queue's entries: owner ids in FIFO order (seq), each with the channel of the client it waits in.
CREATE TABLE IF NOT EXISTS @schema.fair_lock_waiter (
  queue text NOT NULL REFERENCES @schema.fair_lock_queue (key) ON DELETE CASCADE,
  owner text NOT NULL,
  channel text NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  PRIMARY KEY (queue, owner)
);
CREATE INDEX IF NOT EXISTS fair_lock_waiter_order ON @schema.fair_lock_waiter (queue, seq);

-- The clients with waiters in the queue: channel → the time (ms) until which the client counts as alive.
CREATE TABLE IF NOT EXISTS @schema.fair_lock_client (
  queue text NOT NULL REFERENCES @schema.fair_lock_queue (key) ON DELETE CASCADE,
  channel text NOT NULL,
  alive_until bigint NOT NULL,
  PRIMARY KEY (queue, channel)
);

-- Deletes up to 100 expired locks and queues (with their waiters and clients), and expired release markers.
CREATE OR REPLACE FUNCTION @schema.fair_lock_sweep(now_ bigint) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  DELETE FROM @schema.fair_lock l WHERE l.key IN (SELECT key FROM @schema.fair_lock WHERE expires_at <= now_ LIMIT 100) AND l.expires_at <= now_;
  DELETE FROM @schema.fair_lock_queue q WHERE q.key IN (SELECT key FROM @schema.fair_lock_queue WHERE expires_at <= now_ LIMIT 100) AND q.expires_at <= now_;
  PERFORM @schema.marker_sweep();
END
$$;

-- Keeps the queue `queue_` for `ttl` ms from now (a new header when it had none, or only an expired one).
CREATE OR REPLACE FUNCTION @schema.fair_lock_keep(queue_ text, now_ bigint, ttl bigint) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  DELETE FROM @schema.fair_lock_queue q WHERE q.key = queue_ AND q.expires_at <= now_;
  INSERT INTO @schema.fair_lock_queue AS q (key, expires_at) VALUES (queue_, now_ + ttl)
  ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at;
END
$$;

-- includes/fair-advance.lua: hands the free lock `lock_` (its row deleted or expired) to the first live waiter of
-- `queue_`: takes entries from the head until one whose client is still alive, makes it the owner with hold count 0
-- (granted, not yet claimed), mints its token, gives the grant what is left of its client's alive time (at least
-- `floor_` ms), and tells only that waiter, on its client's channel: "+<token>:<owner>". Entries and clients found
-- dead on the way are dropped: each entry is taken once, so a hand-off costs O(1) amortized however many wait.
-- Returns the new owner, or NULL when nobody alive waits.
CREATE OR REPLACE FUNCTION @schema.fair_lock_advance(lock_ text, queue_ text, now_ bigint, floor_ bigint) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  owner_ text;
  ch text;
  alive bigint;
  t bigint;
BEGIN
  SELECT q.expires_at INTO alive FROM @schema.fair_lock_queue q WHERE q.key = queue_;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  IF alive <= now_ THEN
    -- an expired queue: gone, with its waiters and clients
    DELETE FROM @schema.fair_lock_queue q WHERE q.key = queue_;
    RETURN NULL;
  END IF;
  LOOP
    DELETE FROM @schema.fair_lock_waiter w WHERE w.queue = queue_ AND w.owner = (
      SELECT h.owner FROM @schema.fair_lock_waiter h WHERE h.queue = queue_ ORDER BY h.seq LIMIT 1
    ) RETURNING w.owner, w.channel INTO owner_, ch;
    IF NOT FOUND THEN
      RETURN NULL;
    END IF;
    SELECT c.alive_until INTO alive FROM @schema.fair_lock_client c WHERE c.queue = queue_ AND c.channel = ch;
    IF alive > now_ THEN
      t := nextval('@schema.fence');
      INSERT INTO @schema.fair_lock AS l (key, owner, holds, token, channel, expires_at)
      VALUES (lock_, owner_, 0, t, ch, now_ + greatest(alive - now_, floor_))
      ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, holds = 0, token = excluded.token, channel = excluded.channel,
        expires_at = excluded.expires_at;
      PERFORM @schema.notify(ch, '+' || t || ':' || owner_);
      RETURN owner_;
    END IF;
    DELETE FROM @schema.fair_lock_client c WHERE c.queue = queue_ AND c.channel = ch;
  END LOOP;
END
$$;

-- Acquire, re-enter or claim a fair lock, or join its queue.
-- keys: lock, fencing counter, queue, waiters, clients
-- args: owner, lease ms, client id (its channel: k[1] || ':ch:' || id), mode ('1' queue, '0' one attempt, '2' claim
--       a grant only), timing "<alive>:<grant floor>:<state TTL>" (ms)
-- reply: [1, token, holdCount] | [0, pttl, queued, lastToken] | [0, -1, 0] (mode '2': not granted to this owner)
CREATE OR REPLACE FUNCTION @schema.fair_lock_acquire(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  queue_ text := k[3];
  owner_ text := a[1];
  lease bigint := a[2]::bigint;
  ch text := k[1] || ':ch:' || a[3];
  mode text := a[4];
  alive bigint := split_part(a[5], ':', 1)::bigint;
  grant_floor bigint := split_part(a[5], ':', 2)::bigint;
  state_ttl bigint := split_part(a[5], ':', 3)::bigint;
  now_ bigint;
  r @schema.fair_lock%ROWTYPE;
  expired boolean := false;
  current_ text;
  t bigint;
  pttl bigint;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  IF random() < 0.01 THEN
    PERFORM @schema.fair_lock_sweep(now_);
  END IF;
  SELECT * INTO r FROM @schema.fair_lock l WHERE l.key = key_;
  IF FOUND THEN
    IF r.expires_at > now_ THEN
      current_ := r.owner;
    ELSE
      expired := true;
    END IF;
  END IF;
  IF mode = '2' THEN
    -- a claim: the hold count goes from 0 to 1 (never further, so a retried claim is harmless)
    IF current_ IS DISTINCT FROM owner_ THEN
      RETURN jsonb_build_array(0, -1, 0);
    END IF;
    IF r.holds = 0 THEN
      UPDATE @schema.fair_lock l SET holds = 1, expires_at = now_ + lease WHERE l.key = key_;
      r.holds := 1;
    END IF;
    RETURN jsonb_build_array(1, r.token, r.holds);
  END IF;
  IF current_ IS NULL THEN
    -- free: the head of the queue gets it, never a newcomer (nobody queued: this owner, the common case)
    IF expired THEN
      DELETE FROM @schema.fair_lock l WHERE l.key = key_;
    END IF;
    current_ := @schema.fair_lock_advance(key_, queue_, now_, grant_floor);
    IF current_ IS NULL THEN
      t := nextval('@schema.fence');
      INSERT INTO @schema.fair_lock (key, owner, holds, token, channel, expires_at) VALUES (key_, owner_, 1, t, NULL, now_ + lease);
      RETURN jsonb_build_array(1, t, 1);
    END IF;
    SELECT * INTO r FROM @schema.fair_lock l WHERE l.key = key_;
  END IF;
  IF current_ = owner_ THEN
    IF r.holds = 0 THEN
      -- claiming a grant: from here on the caller's lease applies
      UPDATE @schema.fair_lock l SET holds = 1, expires_at = now_ + lease WHERE l.key = key_;
    ELSE
      -- re-entry never shortens the lease an outer hold asked for
      UPDATE @schema.fair_lock l SET holds = r.holds + 1, expires_at = greatest(r.expires_at, now_ + lease) WHERE l.key = key_;
    END IF;
    RETURN jsonb_build_array(1, r.token, r.holds + 1);
  END IF;
  IF mode = '1' THEN
    -- queued (once: a waiter asking again keeps its place), and its client counts as alive for `alive` ms
    PERFORM @schema.fair_lock_keep(queue_, now_, state_ttl);
    INSERT INTO @schema.fair_lock_waiter (queue, owner, channel) VALUES (queue_, owner_, ch) ON CONFLICT (queue, owner) DO NOTHING;
    INSERT INTO @schema.fair_lock_client AS c (queue, channel, alive_until) VALUES (queue_, ch, now_ + alive)
    ON CONFLICT (queue, channel) DO UPDATE SET alive_until = excluded.alive_until;
  END IF;
  -- A queued waiter sleeps until its hand-off message, or until this lease lapses (an expiry notifies nobody): its
  -- next attempt then hands the free lock on. A grant not claimed yet: look again soon.
  pttl := r.expires_at - now_;
  IF r.holds = 0 THEN
    pttl := least(pttl, 50);
  END IF;
  -- the last token now: a hand-off message with a token not above it was sent before this call, which found it stale
  RETURN jsonb_build_array(0, pttl, CASE WHEN mode = '1' THEN 1 ELSE 0 END, @schema.last_token());
END
$$;

-- Release one hold (or every hold), safely retryable; a lock that frees goes straight to the head of the queue.
-- keys: lock, fencing counter, queue, waiters, clients, events marker (unused, see below), [release marker]
-- args: owner, mode (all + 2 × retry), least TTL of a grant in ms, [marker TTL ms]
-- reply: holds left (0 = released, and handed on if anyone waits), -1 not held (a grant not claimed is not held),
--        -2 a marker is needed
-- A release that frees the lock notifies '1' on k[1] || ':ev'. Redis publishes it only while the events marker
-- exists; here notify() already sends only to a channel someone listens on, which an observer does before it looks.
CREATE OR REPLACE FUNCTION @schema.fair_lock_release(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  marker text := k[7];
  owner_ text := a[1];
  mode int := a[2]::int;
  now_ bigint;
  r @schema.fair_lock%ROWTYPE;
  done bigint;
  left_ bigint := 0;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  -- an earlier run of this very request
  done := @schema.marker_get(marker);
  IF done IS NOT NULL THEN
    RETURN to_jsonb(done);
  END IF;
  SELECT * INTO r FROM @schema.fair_lock l WHERE l.key = key_ AND l.expires_at > now_;
  IF NOT FOUND OR r.owner <> owner_ OR r.holds < 1 THEN
    RETURN to_jsonb(-1);
  END IF;
  IF mode % 2 = 0 THEN
    left_ := r.holds - 1;
  END IF;
  IF left_ <= 0 THEN
    DELETE FROM @schema.fair_lock l WHERE l.key = key_;
    PERFORM @schema.fair_lock_advance(key_, k[3], now_, a[3]::bigint);
    PERFORM @schema.notify(key_ || ':ev', '1');
    RETURN to_jsonb(0);
  END IF;
  IF marker IS NULL THEN
    RETURN to_jsonb(-2);
  END IF;
  UPDATE @schema.fair_lock l SET holds = left_ WHERE l.key = key_;
  RETURN to_jsonb(@schema.marker_set(marker, left_, a[4]::bigint));
END
$$;

-- One client's heartbeat for all of its waiters on one fair lock: keeps the client alive in the queue, hands on a
-- lock whose holder or grantee died (its row expired), and reports a grant to this client that it may have missed.
-- keys: lock, fencing counter, queue, waiters, clients
-- args: this client's channel, alive time ms, least TTL of a grant ms, TTL of the queue ms
-- reply: [stale (1: this client had been counted dead), the owner id of this client's waiter the lock is granted to, or null]
CREATE OR REPLACE FUNCTION @schema.fair_lock_heartbeat(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  queue_ text := k[3];
  ch text := a[1];
  now_ bigint;
  prev bigint;
  r @schema.fair_lock%ROWTYPE;
  stale int := 0;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  SELECT c.alive_until INTO prev FROM @schema.fair_lock_client c JOIN @schema.fair_lock_queue q ON q.key = c.queue
  WHERE c.queue = queue_ AND c.channel = ch AND q.expires_at > now_;
  IF coalesce(prev, 0) <= now_ THEN
    stale := 1;
  END IF;
  PERFORM @schema.fair_lock_keep(queue_, now_, a[4]::bigint);
  INSERT INTO @schema.fair_lock_client AS c (queue, channel, alive_until) VALUES (queue_, ch, now_ + a[2]::bigint)
  ON CONFLICT (queue, channel) DO UPDATE SET alive_until = excluded.alive_until;
  SELECT * INTO r FROM @schema.fair_lock l WHERE l.key = key_ AND l.expires_at > now_;
  IF NOT FOUND THEN
    DELETE FROM @schema.fair_lock l WHERE l.key = key_;
    PERFORM @schema.fair_lock_advance(key_, queue_, now_, a[3]::bigint);
    SELECT * INTO r FROM @schema.fair_lock l WHERE l.key = key_;
  END IF;
  IF r.holds = 0 AND r.channel = ch THEN
    RETURN jsonb_build_array(stale, r.owner);
  END IF;
  RETURN jsonb_build_array(stale, NULL);
END
$$;

-- Reads a fair lock's state and its queue in one step.
-- keys: lock, fencing counter, queue, waiters, clients; args: at most this many waiters to list
-- reply: [owner or null, holdCount, token, pttl, lastToken, queueLength, [live waiters' owner ids, head first]]
-- queueLength counts entries not yet dropped, dead ones included; the list holds only waiters whose client is alive.
CREATE OR REPLACE FUNCTION @schema.fair_lock_inspect(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
  r @schema.fair_lock%ROWTYPE;
  last_ bigint := @schema.last_token();
  qlen bigint := 0;
  live jsonb := '[]'::jsonb;
BEGIN
  PERFORM 1 FROM @schema.fair_lock_queue q WHERE q.key = k[3] AND q.expires_at > now_;
  IF FOUND THEN
    SELECT count(*) INTO qlen FROM @schema.fair_lock_waiter w WHERE w.queue = k[3];
    SELECT coalesce(jsonb_agg(h.owner ORDER BY h.seq), '[]'::jsonb) INTO live FROM (
      SELECT w.owner, w.seq, w.channel FROM @schema.fair_lock_waiter w WHERE w.queue = k[3] ORDER BY w.seq LIMIT a[1]::int
    ) h JOIN @schema.fair_lock_client c ON c.queue = k[3] AND c.channel = h.channel
    WHERE c.alive_until > now_;
  END IF;
  SELECT * INTO r FROM @schema.fair_lock l WHERE l.key = k[1] AND l.expires_at > now_;
  IF NOT FOUND THEN
    RETURN jsonb_build_array(NULL, 0, 0, -2, last_, qlen, live);
  END IF;
  RETURN jsonb_build_array(r.owner, r.holds, r.token, r.expires_at - now_, last_, qlen, live);
END
$$;

-- A waiter gives up (timeout, abort): it leaves the queue, and a grant it had not claimed yet goes on to the next.
-- keys: lock, fencing counter, queue, waiters, clients; args: owner, least TTL of a grant ms
-- reply: 1 when an unclaimed grant was passed on, else 0
CREATE OR REPLACE FUNCTION @schema.fair_lock_leave(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  DELETE FROM @schema.fair_lock_waiter w WHERE w.queue = k[3] AND w.owner = a[1];
  DELETE FROM @schema.fair_lock l WHERE l.key = k[1] AND l.owner = a[1] AND l.holds = 0 AND l.expires_at > now_;
  IF FOUND THEN
    PERFORM @schema.fair_lock_advance(k[1], k[3], now_, a[2]::bigint);
    RETURN to_jsonb(1);
  END IF;
  RETURN to_jsonb(0);
END
$$;

-- Deletes a fair lock whoever holds it, and hands it to the head of the queue.
-- keys: lock, fencing counter, queue, waiters, clients, events marker (unused: see fair_lock_release)
-- args: least TTL of a grant ms, the events channel ('a' is notified there when a lock was deleted)
-- reply: 1 when a lock was deleted, 0 when there was none
CREATE OR REPLACE FUNCTION @schema.fair_lock_force_unlock(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
  deleted boolean;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  DELETE FROM @schema.fair_lock l WHERE l.key = k[1] AND l.expires_at > now_;
  deleted := FOUND;
  DELETE FROM @schema.fair_lock l WHERE l.key = k[1];
  PERFORM @schema.fair_lock_advance(k[1], k[3], now_, a[1]::bigint);
  IF deleted THEN
    PERFORM @schema.notify(a[2], 'a');
    RETURN to_jsonb(1);
  END IF;
  RETURN to_jsonb(0);
END
$$;
