-- The cache-stampede guard (src/recipes/cache-loader.ts): the same operations as src/lua/cache/*.lua, with the same
-- keys, arguments and replies. Three tables, each keyed by the record name the Redis script would use: the cached
-- values (`:cv`), the load in progress (`:cl`, whose lease owned/renew extends: see owned_renew) and the last failed
-- load (`:ce`). Every row expires. The operations of one cache key take turns on its value key (serialize).

CREATE TABLE IF NOT EXISTS @schema.cache_value (
  key text PRIMARY KEY,
  -- 'v' || encoded value, or 'e' || error JSON when errors are cached
  value text NOT NULL,
  expires_at bigint NOT NULL
);

-- The one load in progress: its owner id, held until expires_at (its lease, renewed while the loader runs).
CREATE TABLE IF NOT EXISTS @schema.cache_load (
  key text PRIMARY KEY,
  owner text NOT NULL,
  expires_at bigint NOT NULL
);

-- The last failed load: its owner id and error JSON, for the callers that waited for that very load.
CREATE TABLE IF NOT EXISTS @schema.cache_error (
  key text PRIMARY KEY,
  owner text NOT NULL,
  error text NOT NULL,
  expires_at bigint NOT NULL
);

-- Deletes up to 100 expired rows of each table.
CREATE OR REPLACE FUNCTION @schema.cache_sweep(now_ bigint) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  DELETE FROM @schema.cache_value c WHERE c.key IN (SELECT key FROM @schema.cache_value WHERE expires_at <= now_ LIMIT 100) AND c.expires_at <= now_;
  DELETE FROM @schema.cache_load c WHERE c.key IN (SELECT key FROM @schema.cache_load WHERE expires_at <= now_ LIMIT 100) AND c.expires_at <= now_;
  DELETE FROM @schema.cache_error c WHERE c.key IN (SELECT key FROM @schema.cache_error WHERE expires_at <= now_ LIMIT 100) AND c.expires_at <= now_;
END
$$;

-- keys: value, load, last failure
-- args: owner of a new load, load lease ms, the load this caller saw in progress ('' if none)
-- reply: [2, value] hit | [4, errorJson] the load it waited for failed | [1] load it | [0, pttl, loadOwner] busy
CREATE OR REPLACE FUNCTION @schema.cache_claim(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
  v text;
  e @schema.cache_error%ROWTYPE;
  l @schema.cache_load%ROWTYPE;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  IF random() < 0.01 THEN
    PERFORM @schema.cache_sweep(now_);
  END IF;
  SELECT c.value INTO v FROM @schema.cache_value c WHERE c.key = k[1] AND c.expires_at > now_;
  IF FOUND THEN
    RETURN jsonb_build_array(2, v);
  END IF;
  IF a[3] <> '' THEN
    SELECT * INTO e FROM @schema.cache_error c WHERE c.key = k[3] AND c.expires_at > now_;
    IF FOUND AND e.owner = a[3] THEN
      RETURN jsonb_build_array(4, e.error);
    END IF;
  END IF;
  -- a free (or lapsed) load lock is taken; the condition also keeps a lease renewed meanwhile (owned/renew does not
  -- take this key's turn)
  INSERT INTO @schema.cache_load AS c (key, owner, expires_at) VALUES (k[2], a[1], now_ + a[2]::bigint)
  ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
  WHERE c.expires_at <= now_;
  IF FOUND THEN
    RETURN jsonb_build_array(1);
  END IF;
  SELECT * INTO l FROM @schema.cache_load c WHERE c.key = k[2];
  RETURN jsonb_build_array(0, greatest(l.expires_at - now_, 1), l.owner);
END
$$;

-- keys: value, load
-- args: owner of the load, 'v' || encoded value, ttl ms, channel
-- reply: 1 when the load lock was still ours, 0 when it had lapsed (the value is stored either way)
CREATE OR REPLACE FUNCTION @schema.cache_fill(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
  ours boolean;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  INSERT INTO @schema.cache_value AS c (key, value, expires_at) VALUES (k[1], a[2], now_ + a[3]::bigint)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at;
  DELETE FROM @schema.cache_load c WHERE c.key = k[2] AND c.owner = a[1] RETURNING c.expires_at > now_ INTO ours;
  PERFORM @schema.notify(a[4], 'a');
  RETURN to_jsonb(CASE WHEN ours THEN 1 ELSE 0 END);
END
$$;

-- keys: value, load, last failure
-- args: owner of the load, error JSON, how long waiters can read the failure (ms), channel, errorTtl ms (0: do not
-- cache the error as the value)
-- reply: 1
CREATE OR REPLACE FUNCTION @schema.cache_fail(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
  error_ttl bigint := a[5]::bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  DELETE FROM @schema.cache_load c WHERE c.key = k[2] AND c.owner = a[1];
  INSERT INTO @schema.cache_error AS c (key, owner, error, expires_at) VALUES (k[3], a[1], a[2], now_ + a[3]::bigint)
  ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, error = excluded.error, expires_at = excluded.expires_at;
  IF error_ttl > 0 THEN
    -- only when no value is cached (an expired one is absent)
    INSERT INTO @schema.cache_value AS c (key, value, expires_at) VALUES (k[1], 'e' || a[2], now_ + error_ttl)
    ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at
    WHERE c.expires_at <= now_;
  END IF;
  PERFORM @schema.notify(a[4], 'a');
  RETURN to_jsonb(1);
END
$$;

-- keys: value; reply: the stored string ('v' || encoded value, or 'e' || error JSON), or null on a miss
CREATE OR REPLACE FUNCTION @schema.cache_get(k text[], a text[]) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT to_jsonb(c.value) FROM @schema.cache_value c WHERE c.key = k[1] AND c.expires_at > @schema.now_ms()
$$;

-- keys: value; reply: 1 when a value was cached (it is forgotten), else 0
CREATE OR REPLACE FUNCTION @schema.cache_delete(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  live boolean;
BEGIN
  PERFORM @schema.serialize(k[1]);
  DELETE FROM @schema.cache_value c WHERE c.key = k[1] RETURNING c.expires_at > @schema.now_ms() INTO live;
  RETURN to_jsonb(CASE WHEN live THEN 1 ELSE 0 END);
END
$$;
