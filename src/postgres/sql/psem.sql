-- The permit-expirable semaphore (src/primitives/permit-expirable-semaphore.ts): the same operations as
-- src/lua/psem/*.lua, with the same keys (free permits, leases, permit weights: the first names the semaphore here),
-- arguments and replies. A semaphore is one row: its free permits, and the TTL of its own it may have (NULL: it
-- persists); its leases are rows of their own, which go with it (ON DELETE CASCADE): a semaphore whose TTL ran out is
-- absent with every permit in it, as its three Redis keys expire together. A lease's expires_at is NULL for a permit
-- without a lease (it persists until released). Every operation that writes first reclaims the leases that ran out,
-- giving their permits back.

CREATE TABLE IF NOT EXISTS @schema.psem (
  key text PRIMARY KEY,
  free bigint NOT NULL,
  expires_at bigint
);

CREATE TABLE IF NOT EXISTS @schema.psem_lease (
  key text NOT NULL REFERENCES @schema.psem (key) ON DELETE CASCADE,
  id text NOT NULL,
  permits bigint NOT NULL,
  expires_at bigint,
  PRIMARY KEY (key, id)
);

-- Deletes up to 100 expired semaphores, with their leases. A lease that ran out is not deleted here: its permits go
-- back to its semaphore at the next operation on it (psem_reclaim).
CREATE OR REPLACE FUNCTION @schema.psem_sweep(now_ bigint) RETURNS void LANGUAGE sql VOLATILE AS $$
  DELETE FROM @schema.psem s WHERE s.key IN (SELECT key FROM @schema.psem WHERE expires_at <= $1 LIMIT 100) AND s.expires_at <= $1
$$;

-- The live semaphore `key_` (NULL when it does not exist), its row locked: a sweep (run by an operation on another
-- name) then cannot delete it under this operation. An expired one is deleted with its leases, so that what the
-- caller writes next starts afresh, as on a Redis key that expired. Call it under serialize(key_).
CREATE OR REPLACE FUNCTION @schema.psem_live(key_ text, now_ bigint) RETURNS @schema.psem LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  r @schema.psem%ROWTYPE;
BEGIN
  SELECT * INTO r FROM @schema.psem s WHERE s.key = key_ FOR UPDATE;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  IF r.expires_at <= now_ THEN
    DELETE FROM @schema.psem s WHERE s.key = key_;
    RETURN NULL;
  END IF;
  RETURN r;
END
$$;

-- Gives back the permits of the leases of `key_` that ran out, and wakes the waiters if any came back (see
-- includes/psem-reclaim.lua). Returns the permits given back. Call it under serialize(key_), after psem_live.
CREATE OR REPLACE FUNCTION @schema.psem_reclaim(key_ text, channel text, now_ bigint) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  back bigint;
BEGIN
  WITH gone AS (
    DELETE FROM @schema.psem_lease l WHERE l.key = key_ AND l.expires_at <= now_ RETURNING l.permits
  )
  SELECT coalesce(sum(permits), 0) INTO back FROM gone;
  IF back > 0 THEN
    UPDATE @schema.psem SET free = free + back WHERE psem.key = key_;
    PERFORM @schema.notify(channel, 'a');
  END IF;
  RETURN back;
END
$$;

-- ms from `now_` until the earliest lease of `key_` runs out, or -1 when none has an end (includes/psem-expiry.lua).
CREATE OR REPLACE FUNCTION @schema.psem_next_expiry(key_ text, now_ bigint) RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT CASE WHEN min(l.expires_at) IS NULL THEN -1 ELSE greatest(1, min(l.expires_at) - $2) END
  FROM @schema.psem_lease l WHERE l.key = $1
$$;

-- keys: free permits, leases, weights; args: permit id, permits wanted, lease ms or 'inf', channel
-- reply: [1, free left] | [0, ms until the nearest lease expires, or -1]
CREATE OR REPLACE FUNCTION @schema.psem_acquire(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  want bigint := a[2]::bigint;
  now_ bigint;
  r @schema.psem%ROWTYPE;
  left_ bigint;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  IF random() < 0.01 THEN
    PERFORM @schema.psem_sweep(now_);
  END IF;
  r := @schema.psem_live(key_, now_);
  PERFORM @schema.psem_reclaim(key_, a[4], now_);
  IF coalesce((SELECT s.free FROM @schema.psem s WHERE s.key = key_), 0) >= want THEN
    -- want >= 1, so the semaphore exists
    UPDATE @schema.psem SET free = free - want WHERE psem.key = key_ RETURNING free INTO left_;
    INSERT INTO @schema.psem_lease AS l (key, id, permits, expires_at)
    VALUES (key_, a[1], want, CASE WHEN a[3] <> 'inf' THEN now_ + a[3]::bigint END)
    ON CONFLICT (key, id) DO UPDATE SET permits = excluded.permits, expires_at = excluded.expires_at;
    RETURN jsonb_build_array(1, left_);
  END IF;
  RETURN jsonb_build_array(0, @schema.psem_next_expiry(key_, now_));
END
$$;

-- keys: free permits, leases, weights; args: lease ms or 'inf', channel, permit id 1, id 2, … (one permit each)
-- reply: [1, free left] | [0, ms until the nearest lease expires, or -1]
CREATE OR REPLACE FUNCTION @schema.psem_acquire_each(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  want bigint := cardinality(a) - 2;
  now_ bigint;
  r @schema.psem%ROWTYPE;
  left_ bigint;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  IF random() < 0.01 THEN
    PERFORM @schema.psem_sweep(now_);
  END IF;
  r := @schema.psem_live(key_, now_);
  PERFORM @schema.psem_reclaim(key_, a[2], now_);
  IF coalesce((SELECT s.free FROM @schema.psem s WHERE s.key = key_), 0) >= want THEN
    UPDATE @schema.psem SET free = free - want WHERE psem.key = key_ RETURNING free INTO left_;
    INSERT INTO @schema.psem_lease AS l (key, id, permits, expires_at)
    SELECT key_, id, 1, CASE WHEN a[1] <> 'inf' THEN now_ + a[1]::bigint END FROM unnest(a[3:]) AS id
    ON CONFLICT (key, id) DO UPDATE SET permits = excluded.permits, expires_at = excluded.expires_at;
    RETURN jsonb_build_array(1, left_);
  END IF;
  RETURN jsonb_build_array(0, @schema.psem_next_expiry(key_, now_));
END
$$;

-- keys: free permits, leases, weights; args: permits, channel, 'add' or 'nx', with 'nx' a TTL ms or '0' for none
-- reply: [changed 1/0, free permits now]
CREATE OR REPLACE FUNCTION @schema.psem_add(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  n bigint := a[1]::bigint;
  now_ bigint;
  r @schema.psem%ROWTYPE;
  free_ bigint;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  r := @schema.psem_live(key_, now_);
  PERFORM @schema.psem_reclaim(key_, a[2], now_);
  IF a[3] = 'nx' THEN
    IF r.key IS NOT NULL THEN
      RETURN jsonb_build_array(0, (SELECT s.free FROM @schema.psem s WHERE s.key = key_));
    END IF;
    INSERT INTO @schema.psem (key, free, expires_at) VALUES (key_, n, CASE WHEN a[4] <> '0' THEN now_ + a[4]::bigint END);
    PERFORM @schema.notify(a[2], 'a');
    RETURN jsonb_build_array(1, n);
  END IF;
  -- a live semaphore keeps its TTL; a missing one is created without one
  INSERT INTO @schema.psem AS s (key, free, expires_at) VALUES (key_, n, NULL)
  ON CONFLICT (key) DO UPDATE SET free = s.free + n
  RETURNING free INTO free_;
  IF n > 0 THEN
    PERFORM @schema.notify(a[2], 'a');
  END IF;
  RETURN jsonb_build_array(1, free_);
END
$$;

-- keys: free permits, leases, weights; args: TTL ms, or '0' to persist; reply: 1 done, 0 it does not exist
CREATE OR REPLACE FUNCTION @schema.psem_expire(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  UPDATE @schema.psem SET expires_at = CASE WHEN a[1] <> '0' THEN now_ + a[1]::bigint END
  WHERE psem.key = k[1] AND (psem.expires_at IS NULL OR psem.expires_at > now_);
  RETURN to_jsonb(CASE WHEN FOUND THEN 1 ELSE 0 END);
END
$$;

-- keys: free permits, leases, weights; args: channel; reply: the permits given back (live leases only), 0 when none
CREATE OR REPLACE FUNCTION @schema.psem_force_release(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  now_ bigint;
  r @schema.psem%ROWTYPE;
  back bigint;
  leases bigint;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  r := @schema.psem_live(key_, now_);
  PERFORM @schema.psem_reclaim(key_, a[1], now_);
  WITH gone AS (DELETE FROM @schema.psem_lease l WHERE l.key = key_ RETURNING l.permits)
  SELECT coalesce(sum(permits), 0), count(*) INTO back, leases FROM gone;
  IF leases = 0 THEN
    RETURN to_jsonb(0);
  END IF;
  UPDATE @schema.psem SET free = free + back WHERE psem.key = key_;
  PERFORM @schema.notify(a[1], 'a');
  RETURN to_jsonb(back);
END
$$;

-- keys: free permits, leases, weights; args: at most this many leases to list (read only: expired leases count as
-- free, as the next operation's reclaim makes them)
-- reply: [free, held, live leases, id 1, permits 1, ms left 1 (-1: no lease), …], soonest expiry first
CREATE OR REPLACE FUNCTION @schema.psem_leases(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  now_ bigint := @schema.now_ms();
  free_ bigint;
  reply jsonb;
BEGIN
  SELECT s.free INTO free_ FROM @schema.psem s WHERE s.key = key_ AND (s.expires_at IS NULL OR s.expires_at > now_);
  IF NOT FOUND THEN
    -- no semaphore: no leases either
    RETURN jsonb_build_array(0, 0, 0);
  END IF;
  SELECT jsonb_build_array(
    free_ + coalesce(sum(l.permits) FILTER (WHERE l.expires_at <= now_), 0),
    coalesce(sum(l.permits) FILTER (WHERE l.expires_at IS NULL OR l.expires_at > now_), 0),
    count(*) FILTER (WHERE l.expires_at IS NULL OR l.expires_at > now_)
  ) INTO reply FROM @schema.psem_lease l WHERE l.key = key_;
  SELECT reply || coalesce(jsonb_agg(x ORDER BY n), '[]'::jsonb) INTO reply FROM (
    SELECT n, x FROM (
      SELECT row_number() OVER (ORDER BY l.expires_at NULLS LAST, l.id) AS i, l.id, l.permits,
        coalesce(l.expires_at - now_, -1) AS left_
      FROM @schema.psem_lease l WHERE l.key = key_ AND (l.expires_at IS NULL OR l.expires_at > now_)
      ORDER BY l.expires_at NULLS LAST, l.id LIMIT a[1]::bigint
    ) s, LATERAL (VALUES (3 * s.i, to_jsonb(s.id)), (3 * s.i + 1, to_jsonb(s.permits)), (3 * s.i + 2, to_jsonb(s.left_))) AS v(n, x)
  ) q;
  RETURN reply;
END
$$;

-- keys: free permits, leases, weights; args: permit id, channel; reply: the permits given back, 0 when not held
CREATE OR REPLACE FUNCTION @schema.psem_release(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  now_ bigint;
  r @schema.psem%ROWTYPE;
  back bigint;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  r := @schema.psem_live(key_, now_);
  PERFORM @schema.psem_reclaim(key_, a[2], now_);
  DELETE FROM @schema.psem_lease l WHERE l.key = key_ AND l.id = a[1] RETURNING l.permits INTO back;
  IF NOT FOUND THEN
    RETURN to_jsonb(0);
  END IF;
  UPDATE @schema.psem SET free = free + back WHERE psem.key = key_;
  PERFORM @schema.notify(a[2], 'a');
  RETURN to_jsonb(back);
END
$$;

-- keys: free permits, leases, weights; args: 'any' or 'all', channel, permit id 1, id 2, … (distinct)
-- reply: [leases released, permits given back]; with 'all', [-(ids not held), 0] when one is not held (none released)
CREATE OR REPLACE FUNCTION @schema.psem_release_many(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  ids text[] := a[3:];
  now_ bigint;
  r @schema.psem%ROWTYPE;
  missing bigint;
  released bigint;
  back bigint;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  r := @schema.psem_live(key_, now_);
  PERFORM @schema.psem_reclaim(key_, a[2], now_);
  IF a[1] = 'all' THEN
    SELECT count(*) INTO missing FROM unnest(ids) AS i(id)
    WHERE NOT EXISTS (SELECT 1 FROM @schema.psem_lease l WHERE l.key = key_ AND l.id = i.id);
    IF missing > 0 THEN
      RETURN jsonb_build_array(-missing, 0);
    END IF;
  END IF;
  WITH gone AS (DELETE FROM @schema.psem_lease l WHERE l.key = key_ AND l.id = ANY (ids) RETURNING l.permits)
  SELECT count(*), coalesce(sum(permits), 0) INTO released, back FROM gone;
  IF released > 0 THEN
    UPDATE @schema.psem SET free = free + back WHERE psem.key = key_;
    PERFORM @schema.notify(a[2], 'a');
  END IF;
  RETURN jsonb_build_array(released, back);
END
$$;

-- keys: free permits, leases, weights; args: permit id, lease ms, channel; reply: 1 extended, 0 not held (an expired
-- permit is never revived)
CREATE OR REPLACE FUNCTION @schema.psem_renew(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  now_ bigint;
  r @schema.psem%ROWTYPE;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  r := @schema.psem_live(key_, now_);
  PERFORM @schema.psem_reclaim(key_, a[3], now_);
  UPDATE @schema.psem_lease SET expires_at = now_ + a[2]::bigint WHERE psem_lease.key = key_ AND psem_lease.id = a[1];
  RETURN to_jsonb(CASE WHEN FOUND THEN 1 ELSE 0 END);
END
$$;

-- keys: free permits, leases, weights; args: the total, channel; reply: the free permits now (total - held by live
-- leases, below zero while more are held than the total)
CREATE OR REPLACE FUNCTION @schema.psem_set(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  now_ bigint;
  r @schema.psem%ROWTYPE;
  held bigint;
  before_ bigint;
  free_ bigint;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  r := @schema.psem_live(key_, now_);
  PERFORM @schema.psem_reclaim(key_, a[2], now_);
  SELECT coalesce(sum(l.permits), 0) INTO held FROM @schema.psem_lease l WHERE l.key = key_;
  before_ := coalesce((SELECT s.free FROM @schema.psem s WHERE s.key = key_), 0);
  free_ := a[1]::bigint - held;
  -- a semaphore with a TTL of its own keeps it
  INSERT INTO @schema.psem AS s (key, free, expires_at) VALUES (key_, free_, NULL)
  ON CONFLICT (key) DO UPDATE SET free = excluded.free;
  IF free_ > before_ THEN
    PERFORM @schema.notify(a[2], 'a');
  END IF;
  RETURN to_jsonb(free_);
END
$$;

-- keys: free permits, leases, weights; args: channel, a permit id or ''
-- reply: [free, held, leases, ms left on the id's lease (-2 not held, -3 held without a lease), the id's permits]
CREATE OR REPLACE FUNCTION @schema.psem_state(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  key_ text := k[1];
  now_ bigint;
  r @schema.psem%ROWTYPE;
  held bigint;
  leases bigint;
  l @schema.psem_lease%ROWTYPE;
  left_ bigint := -2;
  weight bigint := 0;
BEGIN
  PERFORM @schema.serialize(key_);
  now_ := @schema.now_ms();
  r := @schema.psem_live(key_, now_);
  PERFORM @schema.psem_reclaim(key_, a[1], now_);
  SELECT coalesce(sum(x.permits), 0), count(*) INTO held, leases FROM @schema.psem_lease x WHERE x.key = key_;
  IF a[2] <> '' THEN
    SELECT * INTO l FROM @schema.psem_lease x WHERE x.key = key_ AND x.id = a[2];
    IF FOUND THEN
      weight := l.permits;
      left_ := CASE WHEN l.expires_at IS NULL THEN -3 ELSE greatest(0, l.expires_at - now_) END;
    END IF;
  END IF;
  RETURN jsonb_build_array(coalesce((SELECT s.free FROM @schema.psem s WHERE s.key = key_), 0), held, leases, left_, weight);
END
$$;

-- keys: free permits; reply: ms until the semaphore itself expires, -1 without a TTL of its own, -2 when it does not
-- exist
CREATE OR REPLACE FUNCTION @schema.psem_pttl(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
  r @schema.psem%ROWTYPE;
BEGIN
  SELECT * INTO r FROM @schema.psem s WHERE s.key = k[1] AND (s.expires_at IS NULL OR s.expires_at > now_);
  IF NOT FOUND THEN
    RETURN to_jsonb(-2);
  END IF;
  RETURN to_jsonb(coalesce(r.expires_at - now_, -1));
END
$$;
