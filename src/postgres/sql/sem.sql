-- The counting semaphore (src/primitives/semaphore.ts): the same operations as src/lua/sem/*.lua, with the same keys,
-- arguments and replies. A semaphore is one row: its free permits (below zero after removing more than were free),
-- and the TTL trySetPermits may give it (NULL: it persists). Acquiring, releasing and draining keep the TTL; a row
-- whose TTL ran out is absent, and a release that finds it so creates a new one without a TTL (as INCRBY does).

CREATE TABLE IF NOT EXISTS @schema.sem (
  key text PRIMARY KEY,
  permits bigint NOT NULL,
  expires_at bigint
);

-- Deletes up to 100 expired semaphores.
CREATE OR REPLACE FUNCTION @schema.sem_sweep(now_ bigint) RETURNS void LANGUAGE sql VOLATILE AS $$
  DELETE FROM @schema.sem s WHERE s.key IN (SELECT key FROM @schema.sem WHERE expires_at <= $1 LIMIT 100) AND s.expires_at <= $1
$$;

-- The free permits of a live semaphore, or NULL when it does not exist (never set, deleted or expired).
CREATE OR REPLACE FUNCTION @schema.sem_free(key_ text, now_ bigint) RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT s.permits FROM @schema.sem s WHERE s.key = $1 AND (s.expires_at IS NULL OR s.expires_at > $2)
$$;

-- keys: semaphore; args: permits wanted; reply: [1, free left] | [0, free]
CREATE OR REPLACE FUNCTION @schema.sem_acquire(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  want bigint := a[1]::bigint;
  now_ bigint;
  free bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  IF random() < 0.01 THEN
    PERFORM @schema.sem_sweep(now_);
  END IF;
  -- one statement: a sweep (run by an operation on another name) cannot delete the row between a read and a write
  UPDATE @schema.sem SET permits = permits - want
  WHERE sem.key = k[1] AND (sem.expires_at IS NULL OR sem.expires_at > now_) AND sem.permits >= want
  RETURNING permits INTO free;
  IF FOUND THEN
    RETURN jsonb_build_array(1, free);
  END IF;
  RETURN jsonb_build_array(0, coalesce(@schema.sem_free(k[1], now_), 0));
END
$$;

-- keys: semaphore; reply: the permits taken (0 when none were free)
CREATE OR REPLACE FUNCTION @schema.sem_drain(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
  free bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  SELECT s.permits INTO free FROM @schema.sem s WHERE s.key = k[1] AND (s.expires_at IS NULL OR s.expires_at > now_) FOR UPDATE;
  IF free > 0 THEN
    UPDATE @schema.sem SET permits = 0 WHERE sem.key = k[1];
    RETURN to_jsonb(free);
  END IF;
  RETURN to_jsonb(0);
END
$$;

-- keys: semaphore; args: permits to add (negative removes), channel, only if it exists ('1') or not ('0')
-- reply: the free permits after, or -1 when asked only if it exists and it does not
CREATE OR REPLACE FUNCTION @schema.sem_release(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  n bigint := a[1]::bigint;
  now_ bigint;
  free bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  IF a[3] = '1' AND @schema.sem_free(k[1], now_) IS NULL THEN
    RETURN to_jsonb(-1);
  END IF;
  -- a live semaphore keeps its TTL; a missing (or expired) one is created without one
  INSERT INTO @schema.sem AS s (key, permits, expires_at) VALUES (k[1], n, NULL)
  ON CONFLICT (key) DO UPDATE SET
    permits = CASE WHEN s.expires_at IS NULL OR s.expires_at > now_ THEN s.permits + n ELSE n END,
    expires_at = CASE WHEN s.expires_at IS NULL OR s.expires_at > now_ THEN s.expires_at END
  RETURNING permits INTO free;
  -- every waiter is woken: they may want different numbers of permits (see sem/release-1.lua)
  IF n > 0 THEN
    PERFORM @schema.notify(a[2], 'a');
  END IF;
  RETURN to_jsonb(free);
END
$$;

-- keys: semaphore; args: permits, channel, TTL ms or '0' for none; reply: 1 set, 0 it existed already (unchanged)
CREATE OR REPLACE FUNCTION @schema.sem_try_set(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  IF @schema.sem_free(k[1], now_) IS NOT NULL THEN
    RETURN to_jsonb(0);
  END IF;
  INSERT INTO @schema.sem AS s (key, permits, expires_at)
  VALUES (k[1], a[1]::bigint, CASE WHEN a[3] <> '0' THEN now_ + a[3]::bigint END)
  ON CONFLICT (key) DO UPDATE SET permits = excluded.permits, expires_at = excluded.expires_at;
  PERFORM @schema.notify(a[2], 'a');
  RETURN to_jsonb(1);
END
$$;

-- keys: semaphore; reply: 1 when it exists, 0 when not
CREATE OR REPLACE FUNCTION @schema.sem_exists(k text[], a text[]) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT to_jsonb(CASE WHEN @schema.sem_free($1[1], @schema.now_ms()) IS NULL THEN 0 ELSE 1 END)
$$;

-- keys: semaphore; reply: the free permits (0 when it does not exist)
CREATE OR REPLACE FUNCTION @schema.sem_available(k text[], a text[]) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT to_jsonb(coalesce(@schema.sem_free($1[1], @schema.now_ms()), 0))
$$;

-- keys: semaphore; reply: 1 when it existed, 0 when not
CREATE OR REPLACE FUNCTION @schema.sem_delete(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
  live boolean;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  DELETE FROM @schema.sem WHERE sem.key = k[1] RETURNING expires_at IS NULL OR expires_at > now_ INTO live;
  RETURN to_jsonb(CASE WHEN live THEN 1 ELSE 0 END);
END
$$;
