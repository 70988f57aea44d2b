-- The read-write lock (src/primitives/read-write-lock.ts): the same operations as src/lua/rw/*.lua, with the same
-- keys, arguments and replies. Many readers or one writer; reentrant both ways; the writer may take the read lock
-- (downgrade), a reader may not take the write lock (upgrade refused); a waiting writer's intent holds new readers
-- back; every reader has its own lease.
--
-- Each table is keyed by the name of the Redis record it stands for (src/keys.ts): the writer by "<base>:rw:w", the
-- readers by "<base>:rw:r" (their hold counts, "<base>:rw:rc" on Redis, are a column here), the intents by
-- "<base>:rw:ww". The operations of one lock take turns on its writer key ("<base>:rw:w", which the readers' key
-- gives by its last letter changed, and the intents' key by its last letter dropped); its channels are built from
-- the writer key as includes/rw-channels.lua does: "<base>:rw:ch" wakes waiters, "<base>:rw:ev" carries releases.

-- The writer: its owner, hold count, fencing token and lease.
CREATE TABLE IF NOT EXISTS @schema.rw_writer (
  key text PRIMARY KEY,
  owner text NOT NULL,
  holds int NOT NULL,
  token bigint NOT NULL,
  expires_at bigint NOT NULL
);

-- The readers: each owner's hold count and lease.
CREATE TABLE IF NOT EXISTS @schema.rw_reader (
  key text NOT NULL,
  owner text NOT NULL,
  holds int NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (key, owner)
);

-- The waiting writers' intents: while one lives, new readers wait.
CREATE TABLE IF NOT EXISTS @schema.rw_intent (
  key text NOT NULL,
  owner text NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (key, owner)
);

-- The writer key of a lock from its readers' key ("<base>:rw:r" → "<base>:rw:w").
CREATE OR REPLACE FUNCTION @schema.rw_writer_key_of_readers(readers text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT left($1, length($1) - 1) || 'w'
$$;

-- A lock's channel from its writer key: rw_channel(writer, 'ch') wakes waiters, rw_channel(writer, 'ev') carries
-- release events (includes/rw-channels.lua).
CREATE OR REPLACE FUNCTION @schema.rw_channel(writer text, suffix text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT left($1, length($1) - 1) || $2
$$;

-- The SHA-1 of `msg` (its UTF-8 bytes) in hex: the readers' fingerprints (src/internal/fingerprint.ts, Lua's
-- redis.sha1hex), without asking for the pgcrypto extension.
CREATE OR REPLACE FUNCTION @schema.sha1_hex(msg text) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  m constant bigint := 4294967295;
  b bytea := convert_to(msg, 'UTF8');
  bits bigint := length(convert_to(msg, 'UTF8'))::bigint * 8;
  h0 bigint := 1732584193;
  h1 bigint := 4023233417;
  h2 bigint := 2562383102;
  h3 bigint := 271733878;
  h4 bigint := 3285377520;
  w bigint[];
  a_ bigint; b_ bigint; c_ bigint; d_ bigint; e_ bigint; f_ bigint; k_ bigint; t_ bigint; x bigint;
  o int;
BEGIN
  b := b || '\x80'::bytea;
  IF length(b) % 64 <> 56 THEN
    b := b || decode(repeat('00', (120 - length(b) % 64) % 64), 'hex');
  END IF;
  b := b || int8send(bits);
  FOR chunk IN 0 .. length(b) / 64 - 1 LOOP
    w := array_fill(0::bigint, ARRAY[80]);
    FOR i IN 0 .. 15 LOOP
      o := chunk * 64 + i * 4;
      w[i + 1] := (get_byte(b, o)::bigint << 24) | (get_byte(b, o + 1)::bigint << 16) | (get_byte(b, o + 2)::bigint << 8) | get_byte(b, o + 3)::bigint;
    END LOOP;
    FOR i IN 16 .. 79 LOOP
      x := w[i - 2] # w[i - 7] # w[i - 13] # w[i - 15];
      w[i + 1] := ((x << 1) | (x >> 31)) & m;
    END LOOP;
    a_ := h0; b_ := h1; c_ := h2; d_ := h3; e_ := h4;
    FOR i IN 0 .. 79 LOOP
      IF i < 20 THEN
        f_ := (b_ & c_) | ((~b_ & m) & d_); k_ := 1518500249;
      ELSIF i < 40 THEN
        f_ := b_ # c_ # d_; k_ := 1859775393;
      ELSIF i < 60 THEN
        f_ := (b_ & c_) | (b_ & d_) | (c_ & d_); k_ := 2400959708;
      ELSE
        f_ := b_ # c_ # d_; k_ := 3395469782;
      END IF;
      t_ := ((((a_ << 5) | (a_ >> 27)) & m) + f_ + e_ + k_ + w[i + 1]) & m;
      e_ := d_; d_ := c_; c_ := ((b_ << 30) | (b_ >> 2)) & m; b_ := a_; a_ := t_;
    END LOOP;
    h0 := (h0 + a_) & m; h1 := (h1 + b_) & m; h2 := (h2 + c_) & m; h3 := (h3 + d_) & m; h4 := (h4 + e_) & m;
  END LOOP;
  RETURN lpad(to_hex(h0), 8, '0') || lpad(to_hex(h1), 8, '0') || lpad(to_hex(h2), 8, '0') || lpad(to_hex(h3), 8, '0') || lpad(to_hex(h4), 8, '0');
END
$$;

-- Deletes up to 100 expired writers, readers and intents (they hold nobody back, but no row should outlive its use).
CREATE OR REPLACE FUNCTION @schema.rw_sweep(now_ bigint) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  DELETE FROM @schema.rw_writer w WHERE w.key IN (SELECT key FROM @schema.rw_writer WHERE expires_at <= now_ LIMIT 100) AND w.expires_at <= now_;
  DELETE FROM @schema.rw_reader r WHERE (r.key, r.owner) IN (
    SELECT key, owner FROM @schema.rw_reader WHERE expires_at <= now_ LIMIT 100
  ) AND r.expires_at <= now_;
  DELETE FROM @schema.rw_intent i WHERE (i.key, i.owner) IN (
    SELECT key, owner FROM @schema.rw_intent WHERE expires_at <= now_ LIMIT 100
  ) AND i.expires_at <= now_;
  PERFORM @schema.events_sweep(now_);
  PERFORM @schema.marker_sweep();
END
$$;

-- keys: writer, readers, readers' hold counts (a column of readers here), intents
-- args: owner, lease ms
-- reply: [1, holdCount] | [0, ms to wait at most]
CREATE OR REPLACE FUNCTION @schema.rw_read_acquire(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  wkey text := k[1];
  rkey text := k[2];
  ikey text := k[4];
  owner_ text := a[1];
  lease bigint := a[2]::bigint;
  now_ bigint;
  w @schema.rw_writer%ROWTYPE;
  writing boolean;
  r @schema.rw_reader%ROWTYPE;
  held boolean;
  first_ bigint;
  count_ int;
BEGIN
  PERFORM @schema.serialize(wkey);
  now_ := @schema.now_ms();
  IF random() < 0.01 THEN
    PERFORM @schema.rw_sweep(now_);
  END IF;
  SELECT * INTO w FROM @schema.rw_writer WHERE rw_writer.key = wkey AND rw_writer.expires_at > now_;
  writing := FOUND;
  IF writing AND w.owner <> owner_ THEN
    RETURN jsonb_build_array(0, w.expires_at - now_);
  END IF;
  SELECT * INTO r FROM @schema.rw_reader WHERE rw_reader.key = rkey AND rw_reader.owner = owner_ AND rw_reader.expires_at > now_;
  held := FOUND;
  -- a new reader waits while a writer's intent lives; a reader re-entering, or the writer (downgrade), does not
  IF NOT held AND NOT writing THEN
    SELECT min(i.expires_at) INTO first_ FROM @schema.rw_intent i WHERE i.key = ikey AND i.expires_at > now_;
    IF first_ IS NOT NULL THEN
      RETURN jsonb_build_array(0, greatest(1, first_ - now_));
    END IF;
  END IF;
  IF held THEN
    count_ := r.holds + 1;
  ELSE
    count_ := 1;
  END IF;
  -- re-entry never shortens the lease an outer hold has
  INSERT INTO @schema.rw_reader AS x (key, owner, holds, expires_at)
  VALUES (rkey, owner_, count_, CASE WHEN held THEN greatest(r.expires_at, now_ + lease) ELSE now_ + lease END)
  ON CONFLICT (key, owner) DO UPDATE SET holds = excluded.holds, expires_at = excluded.expires_at;
  RETURN jsonb_build_array(1, count_);
END
$$;

-- keys: writer, readers, readers' hold counts (unused), intents, fencing counter (unused: tokens come from one sequence)
-- args: owner, lease ms, intent ms ('0': leave no intent)
-- reply: [1, token, holdCount] | [0, ms to wait at most] | [-1] (this owner holds the read lock: upgrade refused)
CREATE OR REPLACE FUNCTION @schema.rw_write_acquire(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  wkey text := k[1];
  rkey text := k[2];
  ikey text := k[4];
  owner_ text := a[1];
  lease bigint := a[2]::bigint;
  intent bigint := a[3]::bigint;
  now_ bigint;
  w @schema.rw_writer%ROWTYPE;
  wait_ms bigint;
  first_ bigint;
  t bigint;
BEGIN
  PERFORM @schema.serialize(wkey);
  now_ := @schema.now_ms();
  IF random() < 0.01 THEN
    PERFORM @schema.rw_sweep(now_);
  END IF;
  SELECT * INTO w FROM @schema.rw_writer WHERE rw_writer.key = wkey AND rw_writer.expires_at > now_;
  IF FOUND THEN
    IF w.owner = owner_ THEN
      -- re-entry never shortens the lease an outer hold asked for
      UPDATE @schema.rw_writer SET holds = w.holds + 1, expires_at = greatest(w.expires_at, now_ + lease) WHERE rw_writer.key = wkey;
      RETURN jsonb_build_array(1, w.token, w.holds + 1);
    END IF;
  END IF;
  IF EXISTS (SELECT 1 FROM @schema.rw_reader r WHERE r.key = rkey AND r.owner = owner_ AND r.expires_at > now_) THEN
    RETURN jsonb_build_array(-1);
  END IF;
  IF w.owner IS NOT NULL THEN
    wait_ms := w.expires_at - now_;
  ELSE
    SELECT min(r.expires_at) INTO first_ FROM @schema.rw_reader r WHERE r.key = rkey AND r.expires_at > now_;
    IF first_ IS NOT NULL THEN
      wait_ms := greatest(1, first_ - now_);
    END IF;
  END IF;
  IF wait_ms IS NOT NULL THEN
    -- busy: this writer waits, and new readers wait behind it while its intent lives
    IF intent > 0 THEN
      INSERT INTO @schema.rw_intent AS i (key, owner, expires_at) VALUES (ikey, owner_, now_ + intent)
      ON CONFLICT (key, owner) DO UPDATE SET expires_at = excluded.expires_at;
    END IF;
    RETURN jsonb_build_array(0, wait_ms);
  END IF;
  t := nextval('@schema.fence');
  INSERT INTO @schema.rw_writer AS x (key, owner, holds, token, expires_at) VALUES (wkey, owner_, 1, t, now_ + lease)
  ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, holds = 1, token = excluded.token, expires_at = excluded.expires_at;
  DELETE FROM @schema.rw_intent WHERE rw_intent.key = ikey AND rw_intent.owner = owner_;
  RETURN jsonb_build_array(1, t, 1);
END
$$;

-- keys: readers, readers' hold counts (unused), intents (unused), writer, events marker, [release marker]
-- args: owner, mode (all + 2 × retry), [marker ttl ms]
-- reply: read holds left (0 = released), -1 not held, -2 a marker is needed
CREATE OR REPLACE FUNCTION @schema.rw_read_release(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  rkey text := k[1];
  wkey text := k[4];
  marker text := k[6];
  owner_ text := a[1];
  mode int := a[2]::int;
  now_ bigint;
  r @schema.rw_reader%ROWTYPE;
  done bigint;
  left_ bigint := 0;
  free boolean;
BEGIN
  PERFORM @schema.serialize(wkey);
  -- an earlier run of this very request
  done := @schema.marker_get(marker);
  IF done IS NOT NULL THEN
    RETURN to_jsonb(done);
  END IF;
  now_ := @schema.now_ms();
  SELECT * INTO r FROM @schema.rw_reader WHERE rw_reader.key = rkey AND rw_reader.owner = owner_ AND rw_reader.expires_at > now_;
  IF NOT FOUND THEN
    RETURN to_jsonb(-1);
  END IF;
  IF mode % 2 = 0 THEN
    left_ := r.holds - 1;
  END IF;
  IF left_ <= 0 THEN
    DELETE FROM @schema.rw_reader WHERE rw_reader.key = rkey AND rw_reader.owner = owner_;
    -- the last reader left: a waiting writer may go now
    free := NOT EXISTS (SELECT 1 FROM @schema.rw_reader x WHERE x.key = rkey AND x.expires_at > now_)
      AND NOT EXISTS (SELECT 1 FROM @schema.rw_writer x WHERE x.key = wkey AND x.expires_at > now_);
    IF free THEN
      PERFORM @schema.notify(@schema.rw_channel(wkey, 'ch'), 'a');
    END IF;
    IF @schema.events_observed(k[5]) THEN
      PERFORM @schema.notify(@schema.rw_channel(wkey, 'ev'), CASE WHEN free THEN 'r1' ELSE 'r0' END);
    END IF;
    RETURN to_jsonb(0);
  END IF;
  IF marker IS NULL THEN
    RETURN to_jsonb(-2);
  END IF;
  UPDATE @schema.rw_reader SET holds = left_ WHERE rw_reader.key = rkey AND rw_reader.owner = owner_;
  RETURN to_jsonb(@schema.marker_set(marker, left_, a[3]::bigint));
END
$$;

-- keys: writer, events marker, readers, [release marker]
-- args: owner, mode (all + 2 × retry), [marker ttl ms]
-- reply: holds left (0 = released), -1 not held, -2 a marker is needed
CREATE OR REPLACE FUNCTION @schema.rw_write_release(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  wkey text := k[1];
  rkey text := k[3];
  marker text := k[4];
  owner_ text := a[1];
  mode int := a[2]::int;
  now_ bigint;
  w @schema.rw_writer%ROWTYPE;
  done bigint;
  left_ bigint := 0;
BEGIN
  PERFORM @schema.serialize(wkey);
  done := @schema.marker_get(marker);
  IF done IS NOT NULL THEN
    RETURN to_jsonb(done);
  END IF;
  now_ := @schema.now_ms();
  SELECT * INTO w FROM @schema.rw_writer WHERE rw_writer.key = wkey AND rw_writer.expires_at > now_;
  IF NOT FOUND OR w.owner <> owner_ THEN
    RETURN to_jsonb(-1);
  END IF;
  IF mode % 2 = 0 THEN
    left_ := w.holds - 1;
  END IF;
  IF left_ <= 0 THEN
    DELETE FROM @schema.rw_writer WHERE rw_writer.key = wkey;
    PERFORM @schema.notify(@schema.rw_channel(wkey, 'ch'), 'a');
    IF @schema.events_observed(k[2]) THEN
      PERFORM @schema.notify(@schema.rw_channel(wkey, 'ev'),
        CASE WHEN EXISTS (SELECT 1 FROM @schema.rw_reader r WHERE r.key = rkey AND r.expires_at > now_) THEN 'w0' ELSE 'w1' END);
    END IF;
    RETURN to_jsonb(0);
  END IF;
  IF marker IS NULL THEN
    RETURN to_jsonb(-2);
  END IF;
  UPDATE @schema.rw_writer SET holds = left_ WHERE rw_writer.key = wkey;
  RETURN to_jsonb(@schema.marker_set(marker, left_, a[3]::bigint));
END
$$;

-- keys: readers, readers' hold counts (unused), intents (unused); args: owner, lease ms
-- reply: 1 extended, 0 this owner holds no read lock (an expired one is never revived)
CREATE OR REPLACE FUNCTION @schema.rw_read_renew(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  UPDATE @schema.rw_reader SET expires_at = @schema.now_ms() + a[2]::bigint
  WHERE rw_reader.key = k[1] AND rw_reader.owner = a[1] AND rw_reader.expires_at > @schema.now_ms();
  RETURN to_jsonb(CASE WHEN FOUND THEN 1 ELSE 0 END);
END
$$;

-- The writer's renewal: what the shared operation owned/renew (src/lua/owned/renew-1.lua: keys [writer], args
-- [owner, lease ms], reply 1 extended | 0 not held) does for a writer key "<base>:rw:w". True when `owner_` holds
-- `key_` and its lease now ends `lease` ms from now; false when it does not (an expired writer is never revived).
CREATE OR REPLACE FUNCTION @schema.rw_writer_renew(key_ text, owner_ text, lease bigint) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  UPDATE @schema.rw_writer SET expires_at = @schema.now_ms() + lease
  WHERE rw_writer.key = key_ AND rw_writer.owner = owner_ AND rw_writer.expires_at > @schema.now_ms();
  RETURN FOUND;
END
$$;

-- keys: readers, readers' hold counts (unused), intents (unused); args: an owner id to report on, or ''
-- reply: [its hold count (0: none), its ms left (-2: none), fingerprint 1, hold count 1, ms left 1, …], longest
-- lease first
CREATE OR REPLACE FUNCTION @schema.rw_readers(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
  reply jsonb := jsonb_build_array(0, -2);
  r @schema.rw_reader%ROWTYPE;
BEGIN
  IF a[1] <> '' THEN
    SELECT * INTO r FROM @schema.rw_reader WHERE rw_reader.key = k[1] AND rw_reader.owner = a[1] AND rw_reader.expires_at > now_;
    IF FOUND THEN
      reply := jsonb_build_array(r.holds, r.expires_at - now_);
    END IF;
  END IF;
  SELECT reply || coalesce(jsonb_agg(x ORDER BY i, n), '[]'::jsonb) INTO reply FROM (
    SELECT row_number() OVER (ORDER BY s.expires_at DESC, s.owner DESC) AS i, s.* FROM @schema.rw_reader s
    WHERE s.key = k[1] AND s.expires_at > now_
  ) q, LATERAL (VALUES (0, to_jsonb(left(@schema.sha1_hex(q.owner), 12))), (1, to_jsonb(q.holds)), (2, to_jsonb(q.expires_at - now_))) AS v(n, x);
  RETURN reply;
END
$$;

-- keys: readers, readers' hold counts (unused), intents (unused); args: at most this many readers
-- reply: [owner 1, hold count 1, ms left 1, owner 2, …], longest lease first
CREATE OR REPLACE FUNCTION @schema.rw_holders(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
  reply jsonb;
BEGIN
  SELECT coalesce(jsonb_agg(x ORDER BY i, n), '[]'::jsonb) INTO reply FROM (
    SELECT row_number() OVER (ORDER BY s.expires_at DESC, s.owner DESC) AS i, s.* FROM @schema.rw_reader s
    WHERE s.key = k[1] AND s.expires_at > now_ ORDER BY s.expires_at DESC, s.owner DESC LIMIT a[1]::int
  ) q, LATERAL (VALUES (0, to_jsonb(q.owner)), (1, to_jsonb(q.holds)), (2, to_jsonb(q.expires_at - now_))) AS v(n, x);
  RETURN reply;
END
$$;

-- keys: writer, readers, readers' hold counts (unused), intents, fencing counter (unused)
-- reply: [writer or null, writer hold count, writer token, writer pttl, readers, waiting writers, lastToken]
CREATE OR REPLACE FUNCTION @schema.rw_inspect(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
  w @schema.rw_writer%ROWTYPE;
  readers bigint;
  intents bigint;
BEGIN
  SELECT count(*) INTO readers FROM @schema.rw_reader r WHERE r.key = k[2] AND r.expires_at > now_;
  SELECT count(*) INTO intents FROM @schema.rw_intent i WHERE i.key = k[4] AND i.expires_at > now_;
  SELECT * INTO w FROM @schema.rw_writer WHERE rw_writer.key = k[1] AND rw_writer.expires_at > now_;
  IF NOT FOUND THEN
    RETURN jsonb_build_array(NULL, 0, 0, -2, readers, intents, @schema.last_token());
  END IF;
  RETURN jsonb_build_array(w.owner, w.holds, w.token, w.expires_at - now_, readers, intents, @schema.last_token());
END
$$;

-- keys: intents; args: owner, channel; reply: 1 when an intent was removed, else 0
CREATE OR REPLACE FUNCTION @schema.rw_withdraw(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  live boolean;
BEGIN
  PERFORM @schema.serialize(left(k[1], length(k[1]) - 1));
  DELETE FROM @schema.rw_intent WHERE rw_intent.key = k[1] AND rw_intent.owner = a[1]
  RETURNING rw_intent.expires_at > @schema.now_ms() INTO live;
  IF live THEN
    -- wake the readers it held back
    PERFORM @schema.notify(a[2], 'a');
    RETURN to_jsonb(1);
  END IF;
  RETURN to_jsonb(0);
END
$$;

-- keys: writer, readers, readers' hold counts (unused), intents (kept: waiting writers still go before new readers),
-- events marker; args: channel, events channel; reply: 1 when a writer or a reader was deleted, 0 when it was free
CREATE OR REPLACE FUNCTION @schema.rw_force_unlock(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
  deleted bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  WITH w AS (DELETE FROM @schema.rw_writer WHERE rw_writer.key = k[1] RETURNING expires_at),
       r AS (DELETE FROM @schema.rw_reader WHERE rw_reader.key = k[2] RETURNING expires_at)
  SELECT (SELECT count(*) FROM w WHERE w.expires_at > now_) + (SELECT count(*) FROM r WHERE r.expires_at > now_) INTO deleted;
  IF deleted > 0 THEN
    PERFORM @schema.notify(a[1], 'a');
    IF @schema.events_observed(k[5]) THEN
      PERFORM @schema.notify(a[2], 'a');
    END IF;
    RETURN to_jsonb(1);
  END IF;
  RETURN to_jsonb(0);
END
$$;
