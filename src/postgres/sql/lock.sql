-- The reentrant lock (src/primitives/lock.ts): the same operations as src/lua/lock/*.lua, with the same keys,
-- arguments and replies. A lock is one row; `holds` 0 is a reservation: a release handed the free lock to the
-- longest-waiting waiter for 50 ms.

CREATE TABLE IF NOT EXISTS @schema.lock (
  key text PRIMARY KEY,
  owner text NOT NULL,
  holds int NOT NULL,
  token bigint NOT NULL,
  expires_at bigint NOT NULL
);

-- The waiters of a lock: owner → when it first found the lock taken (ms). An entry lives max(10 s, 2 × lease) unless
-- its waiter asks again.
CREATE TABLE IF NOT EXISTS @schema.lock_waiter (
  key text NOT NULL,
  owner text NOT NULL,
  since bigint NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (key, owner)
);

-- Deletes up to 100 expired locks and waiter entries (they block nobody, but no row should outlive its use).
CREATE OR REPLACE FUNCTION @schema.lock_sweep(now_ bigint) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  DELETE FROM @schema.lock l WHERE l.key IN (SELECT key FROM @schema.lock WHERE expires_at <= now_ LIMIT 100) AND l.expires_at <= now_;
  DELETE FROM @schema.lock_waiter w WHERE (w.key, w.owner) IN (
    SELECT key, owner FROM @schema.lock_waiter WHERE expires_at <= now_ LIMIT 100
  ) AND w.expires_at <= now_;
  PERFORM @schema.marker_sweep();
END
$$;

-- keys: lock, fencing counter (unused: tokens come from one sequence), waiters
-- args: owner, lease ms, mode (wait + 3 × mayHold, see lock/acquire-3.lua), [since]
-- reply: token | [1, token, holdCount] | [0, pttl, since?]
CREATE OR REPLACE FUNCTION @schema.lock_acquire(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  wkey text := k[3];
  owner_ text := a[1];
  lease bigint := a[2]::bigint;
  mode int := a[3]::int;
  wait int := mode % 3;
  now_ bigint;
  r @schema.lock%ROWTYPE;
  t bigint;
  since_ bigint;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  IF random() < 0.002 THEN
    PERFORM @schema.lock_sweep(now_);
  END IF;
  IF mode < 3 THEN
    -- the common case first, in one statement: an owner minted for this call takes a free (or expired) lock, or the
    -- one a release reserved for it; the token minted when the lock is taken is simply never used
    INSERT INTO @schema.lock AS l (key, owner, holds, token, expires_at) VALUES (key_, owner_, 1, nextval('@schema.fence'), now_ + lease)
    ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, holds = 1, token = excluded.token, expires_at = excluded.expires_at
    WHERE l.expires_at <= now_ OR (l.holds = 0 AND l.owner = excluded.owner)
    RETURNING l.token INTO t;
    IF FOUND THEN
      IF wait = 2 THEN
        DELETE FROM @schema.lock_waiter WHERE lock_waiter.key = wkey AND lock_waiter.owner = owner_;
      END IF;
      RETURN to_jsonb(t);
    END IF;
  END IF;
  SELECT * INTO r FROM @schema.lock WHERE lock.key = key_;
  IF NOT FOUND OR r.expires_at <= now_ OR (r.owner = owner_ AND r.holds = 0) THEN
    -- free (or reserved for this waiter by the release that woke it): a first hold
    t := nextval('@schema.fence');
    INSERT INTO @schema.lock AS l (key, owner, holds, token, expires_at) VALUES (key_, owner_, 1, t, now_ + lease)
    ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, holds = 1, token = excluded.token, expires_at = excluded.expires_at;
    IF wait = 2 THEN
      DELETE FROM @schema.lock_waiter WHERE lock_waiter.key = wkey AND lock_waiter.owner = owner_;
    END IF;
    RETURN to_jsonb(t);
  END IF;
  IF r.owner = owner_ THEN
    IF mode < 3 THEN
      -- an owner minted for this call that holds it already: this very request ran before; report that run
      RETURN jsonb_build_array(1, r.token, r.holds);
    END IF;
    -- re-entry never shortens the lease an outer hold asked for
    UPDATE @schema.lock SET holds = r.holds + 1, expires_at = greatest(r.expires_at, now_ + lease) WHERE lock.key = key_;
    RETURN jsonb_build_array(1, r.token, r.holds + 1);
  END IF;
  IF wait <> 0 THEN
    -- the time it first waited is kept: a release reserves the lock for the longest-waiting waiter
    INSERT INTO @schema.lock_waiter AS w (key, owner, since, expires_at)
    VALUES (wkey, owner_, coalesce(a[4]::bigint, now_), now_ + greatest(10000, 2 * lease))
    ON CONFLICT (key, owner) DO UPDATE SET expires_at = excluded.expires_at,
      since = CASE WHEN w.expires_at <= now_ THEN excluded.since ELSE w.since END
    RETURNING since INTO since_;
    RETURN jsonb_build_array(0, r.expires_at - now_, since_::text);
  END IF;
  RETURN jsonb_build_array(0, r.expires_at - now_);
END
$$;

-- keys: lock, waiters, [release marker]
-- args: owner, mode (all + 2 × retry), [marker ttl ms]
-- reply: holds left (0 = released), -1 not held, -2 a marker is needed
CREATE OR REPLACE FUNCTION @schema.lock_release(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  wkey text := k[2];
  marker text := k[3];
  owner_ text := a[1];
  mode int := a[2]::int;
  now_ bigint;
  r @schema.lock%ROWTYPE;
  done bigint;
  left_ bigint := 0;
  next_ text;
  channel text := left(k[1], length(k[1]) - 4) || 'ch';
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  IF marker IS NULL AND mode % 2 = 0 THEN
    -- the common case first, in one statement: the last hold of a lock nobody waits for
    DELETE FROM @schema.lock WHERE lock.key = key_ AND lock.owner = owner_ AND lock.holds = 1 AND lock.expires_at > now_
      AND NOT EXISTS (SELECT 1 FROM @schema.lock_waiter w WHERE w.key = wkey AND w.expires_at > now_);
    IF FOUND THEN
      PERFORM @schema.notify(channel, '1');
      RETURN to_jsonb(0);
    END IF;
  END IF;
  -- an earlier run of this very request
  IF marker IS NOT NULL THEN
    done := @schema.marker_get(marker);
    IF done IS NOT NULL THEN
      RETURN to_jsonb(done);
    END IF;
  END IF;
  SELECT * INTO r FROM @schema.lock WHERE lock.key = key_ AND lock.expires_at > now_;
  IF NOT FOUND OR r.owner <> owner_ OR r.holds = 0 THEN
    RETURN to_jsonb(-1);
  END IF;
  IF mode % 2 = 0 THEN
    left_ := r.holds - 1;
  END IF;
  IF left_ <= 0 THEN
    SELECT w.owner INTO next_ FROM @schema.lock_waiter w WHERE w.key = wkey AND w.expires_at > now_ ORDER BY w.since, w.owner LIMIT 1;
    IF FOUND THEN
      DELETE FROM @schema.lock_waiter WHERE lock_waiter.key = wkey AND lock_waiter.owner = next_;
      UPDATE @schema.lock SET owner = next_, holds = 0, token = 0, expires_at = now_ + 50 WHERE lock.key = key_;
      PERFORM @schema.notify(channel, '1:' || next_);
    ELSE
      DELETE FROM @schema.lock WHERE lock.key = key_;
      PERFORM @schema.notify(channel, '1');
    END IF;
    RETURN to_jsonb(0);
  END IF;
  IF marker IS NULL THEN
    RETURN to_jsonb(-2);
  END IF;
  UPDATE @schema.lock SET holds = left_ WHERE lock.key = key_;
  RETURN to_jsonb(@schema.marker_set(marker, left_, a[3]::bigint));
END
$$;

-- keys: lock; args: owner, lease ms; reply: 1 extended, 0 not held (an expired lock is never revived)
CREATE OR REPLACE FUNCTION @schema.lock_renew(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  UPDATE @schema.lock SET expires_at = @schema.now_ms() + a[2]::bigint
  WHERE lock.key = k[1] AND lock.owner = a[1] AND lock.expires_at > @schema.now_ms();
  RETURN to_jsonb(CASE WHEN FOUND THEN 1 ELSE 0 END);
END
$$;

-- keys: lock, fencing counter; reply: [owner or null, holdCount, token, pttl, lastToken]
CREATE OR REPLACE FUNCTION @schema.lock_inspect(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
  r @schema.lock%ROWTYPE;
BEGIN
  SELECT * INTO r FROM @schema.lock WHERE lock.key = k[1] AND lock.expires_at > now_;
  IF NOT FOUND THEN
    RETURN jsonb_build_array(NULL, 0, 0, -2, @schema.last_token());
  END IF;
  RETURN jsonb_build_array(r.owner, r.holds, r.token, r.expires_at - now_, @schema.last_token());
END
$$;

-- keys: lock; args: channel; reply: 1 deleted, 0 none
CREATE OR REPLACE FUNCTION @schema.lock_force_unlock(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM @schema.serialize(k[1]);
  DELETE FROM @schema.lock WHERE lock.key = k[1] AND lock.expires_at > @schema.now_ms();
  IF FOUND THEN
    PERFORM @schema.notify(a[1], 'a');
    RETURN to_jsonb(1);
  END IF;
  RETURN to_jsonb(0);
END
$$;

-- keys: waiters; args: at most this many; reply: [now, waiters, owner 1, since 1, …], longest waiting first
CREATE OR REPLACE FUNCTION @schema.lock_waiters(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
  reply jsonb;
BEGIN
  reply := jsonb_build_array(now_, (SELECT count(*) FROM @schema.lock_waiter w WHERE w.key = k[1] AND w.expires_at > now_));
  SELECT reply || coalesce(jsonb_agg(x ORDER BY n), '[]'::jsonb) INTO reply FROM (
    SELECT n, x FROM (
      SELECT row_number() OVER (ORDER BY w.since, w.owner) AS i, w.owner, w.since FROM @schema.lock_waiter w
      WHERE w.key = k[1] AND w.expires_at > now_ ORDER BY w.since, w.owner LIMIT a[1]::int
    ) s, LATERAL (VALUES (2 * s.i, to_jsonb(s.owner)), (2 * s.i + 1, to_jsonb(s.since))) AS v(n, x)
  ) q;
  RETURN reply;
END
$$;

-- keys: waiters; args: owner; reply: 1 when it was listed
CREATE OR REPLACE FUNCTION @schema.lock_withdraw(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  DELETE FROM @schema.lock_waiter WHERE lock_waiter.key = k[1] AND lock_waiter.owner = a[1] AND lock_waiter.expires_at > @schema.now_ms();
  RETURN to_jsonb(CASE WHEN FOUND THEN 1 ELSE 0 END);
END
$$;
