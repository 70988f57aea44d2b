-- Events markers (src/internal/events.ts): the same operation as src/lua/events/mark-1.lua. A marker (Keys.fairObserved,
-- Keys.rwObserved) lives while someone waits for a lock to be free or listens for its releases; the fair lock's and
-- the read-write lock's releases publish on their events channel only while it lives: their functions ask
-- @schema.events_observed(<marker key>), as their Lua asks EXISTS.

CREATE TABLE IF NOT EXISTS @schema.events_marker (
  key text PRIMARY KEY,
  expires_at bigint NOT NULL
);

-- Deletes up to 100 expired markers.
CREATE OR REPLACE FUNCTION @schema.events_sweep(now_ bigint) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  DELETE FROM @schema.events_marker m WHERE m.key IN (SELECT key FROM @schema.events_marker WHERE expires_at <= now_ LIMIT 100) AND m.expires_at <= now_;
END
$$;

-- True while the events marker `key` lives (someone observes the lock): what a release asks before it publishes.
CREATE OR REPLACE FUNCTION @schema.events_observed(key text) RETURNS boolean LANGUAGE sql VOLATILE AS $$
  SELECT EXISTS (SELECT 1 FROM @schema.events_marker m WHERE m.key = $1 AND m.expires_at > @schema.now_ms())
$$;

-- keys: events marker; args: ttl ms; reply: 1 (set, or its life extended)
CREATE OR REPLACE FUNCTION @schema.events_mark(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  IF random() < 0.01 THEN
    PERFORM @schema.events_sweep(now_);
  END IF;
  INSERT INTO @schema.events_marker AS m (key, expires_at) VALUES (k[1], now_ + a[1]::bigint)
  ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at;
  RETURN to_jsonb(1);
END
$$;
