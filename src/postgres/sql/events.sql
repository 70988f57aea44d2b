-- Events markers (src/internal/events.ts): the fair lock and the read-write lock publish their releases on an events
-- channel only while a marker of theirs lives ("<base>:fair:o", "<base>:rw:o"): a client that waits for the lock to
-- be free or listens for its releases sets it (events/mark) before it subscribes and looks, and refreshes it while it
-- observes.

CREATE TABLE IF NOT EXISTS @schema.observed (
  key text PRIMARY KEY,
  expires_at bigint NOT NULL
);

-- True while the events marker `key` lives (false for NULL).
CREATE OR REPLACE FUNCTION @schema.observed(key text) RETURNS boolean LANGUAGE sql VOLATILE AS $$
  SELECT EXISTS (SELECT 1 FROM @schema.observed o WHERE o.key = $1 AND o.expires_at > @schema.now_ms())
$$;

-- Deletes up to 100 expired events markers: called now and then by the families that read them.
CREATE OR REPLACE FUNCTION @schema.observed_sweep(now_ bigint) RETURNS void LANGUAGE sql VOLATILE AS $$
  DELETE FROM @schema.observed o WHERE o.key IN (
    SELECT key FROM @schema.observed WHERE expires_at <= $1 LIMIT 100
  ) AND o.expires_at <= $1
$$;

-- keys: the events marker; args: ttl ms; reply: 1 (set, or its life extended, for ttl ms)
CREATE OR REPLACE FUNCTION @schema.events_mark(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  INSERT INTO @schema.observed AS o (key, expires_at) VALUES (k[1], @schema.now_ms() + a[1]::bigint)
  ON CONFLICT (key) DO UPDATE SET expires_at = excluded.expires_at;
  RETURN to_jsonb(1);
END
$$;
