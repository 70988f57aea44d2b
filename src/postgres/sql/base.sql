-- What every family of operations shares: the schema's version, the store's clock, wake-ups, release markers and the
-- fencing sequence. When installed, the schema's quoted name stands for the at-schema marker below, and the name of
-- its notification channel (the schema's name, as a string) for the at-channel marker: see src/postgres/schema.ts.
--
-- Every operation is one function `<family>_<op>(k text[], a text[]) RETURNS jsonb`, named after the Redis script of
-- the same operation (`lock/acquire` → `lock_acquire`), with the same keys, arguments and reply: `k` are the names of
-- the records it touches (built by src/keys.ts), `a` its arguments as text. One call is one statement: atomic, in one
-- round trip, with no session state, so any pool and a transaction-mode PgBouncer serve it.
--
-- Rules every function keeps:
-- - time is the server's: @schema.now_ms(), from clock_timestamp(), never the client's;
-- - a function that changes a name's records first takes @schema.serialize(<its main key>): a transaction-scoped
--   advisory lock, so the operations of one name run one at a time, as a Lua script does (two names whose 64-bit
--   hashes collide merely take turns);
-- - a row whose expires_at has passed is absent: every read filters it, and writes replace or delete it;
-- - fencing tokens come from one sequence (CACHE 1: global order across sessions; a sequence never goes back, even
--   when a transaction aborts), so a token is greater than every earlier token of any name.

CREATE SCHEMA IF NOT EXISTS @schema;

CREATE TABLE IF NOT EXISTS @schema.meta (
  id int PRIMARY KEY CHECK (id = 1),
  version int NOT NULL,
  revision text NOT NULL
);

CREATE SEQUENCE IF NOT EXISTS @schema.fence AS bigint CACHE 1;

-- A release request's marker: the holds an earlier run of the same request left (see includes/release-retry.lua).
CREATE TABLE IF NOT EXISTS @schema.marker (
  key text PRIMARY KEY,
  value bigint NOT NULL,
  expires_at bigint NOT NULL
);

CREATE OR REPLACE FUNCTION @schema.now_ms() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint
$$;

CREATE OR REPLACE FUNCTION @schema.serialize(key text) RETURNS void LANGUAGE sql VOLATILE AS $$
  SELECT pg_advisory_xact_lock(hashtextextended($1, 0))
$$;

-- Who listens on which channel: a listening connection registers each channel it waits on (and refreshes its rows
-- while it lives). A wake-up is sent only when someone listens: a transaction that NOTIFYs holds a database-wide lock
-- through its commit, so notifying transactions commit one at a time, and a release nobody waits for must not pay that.
CREATE TABLE IF NOT EXISTS @schema.listener (
  channel text NOT NULL,
  id text NOT NULL,
  expires_at bigint NOT NULL,
  PRIMARY KEY (channel, id)
);
CREATE INDEX IF NOT EXISTS listener_id ON @schema.listener (id);

-- A wake-up for the waiters on `channel` (delivered at commit, to every client LISTENing on the schema's channel),
-- when anyone listens on it. A waiter registers before its next attempt, and every operation on a name runs after the
-- one before it (see serialize): an operation that missed a registration ran before that attempt, which then sees it.
CREATE OR REPLACE FUNCTION @schema.notify(channel text, message text) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM @schema.listener l WHERE l.channel = $1 AND l.expires_at > @schema.now_ms()) THEN
    PERFORM pg_notify(@channel, $2 || ' ' || $1);
  END IF;
END
$$;

-- A listening connection's channels: `id` registers `channels` (or refreshes every row of its own when none are
-- given) for `ttl` ms; expired rows go.
CREATE OR REPLACE FUNCTION @schema.listener_add(id_ text, channels text[], ttl bigint) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
BEGIN
  IF cardinality(channels) = 0 THEN
    UPDATE @schema.listener SET expires_at = now_ + ttl WHERE listener.id = id_;
    DELETE FROM @schema.listener l WHERE (l.channel, l.id) IN (SELECT channel, id FROM @schema.listener WHERE expires_at <= now_ LIMIT 1000) AND l.expires_at <= now_;
  ELSE
    INSERT INTO @schema.listener AS l (channel, id, expires_at) SELECT c, id_, now_ + ttl FROM unnest(channels) AS c
    ON CONFLICT (channel, id) DO UPDATE SET expires_at = excluded.expires_at;
  END IF;
END
$$;

-- Drops `id`'s registration of `channels` (every one of its channels when none are given).
CREATE OR REPLACE FUNCTION @schema.listener_drop(id_ text, channels text[]) RETURNS void LANGUAGE sql VOLATILE AS $$
  DELETE FROM @schema.listener l WHERE l.id = $1 AND (cardinality($2) = 0 OR l.channel = ANY ($2))
$$;

-- The last token minted (0 before the first): at least every token handed out so far.
CREATE OR REPLACE FUNCTION @schema.last_token() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM @schema.fence
$$;

-- What an earlier run of a release request recorded, or NULL (also for no marker).
CREATE OR REPLACE FUNCTION @schema.marker_get(marker text) RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT m.value FROM @schema.marker m WHERE m.key = $1 AND m.expires_at > @schema.now_ms()
$$;

-- Records what a release request left, for `ttl` ms, and returns it.
CREATE OR REPLACE FUNCTION @schema.marker_set(marker text, left_ bigint, ttl bigint) RETURNS bigint LANGUAGE sql VOLATILE AS $$
  INSERT INTO @schema.marker AS m (key, value, expires_at) VALUES ($1, $2, @schema.now_ms() + $3)
  ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires_at = excluded.expires_at;
  SELECT $2;
$$;

-- Deletes up to 100 expired markers: called now and then by the operations that write them.
CREATE OR REPLACE FUNCTION @schema.marker_sweep() RETURNS void LANGUAGE sql VOLATILE AS $$
  DELETE FROM @schema.marker m WHERE m.key IN (
    SELECT key FROM @schema.marker WHERE expires_at <= @schema.now_ms() LIMIT 100
  ) AND m.expires_at <= @schema.now_ms()
$$;
