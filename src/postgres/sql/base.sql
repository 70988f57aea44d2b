-- What every family of operations shares: the schema's version, the store's clock, wake-ups, release markers and the
-- fencing sequence. `@schema` is replaced by the quoted schema name, `@channel` by the quoted name of the
-- notification channel (the schema's name): see src/postgres/schema.ts.
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

-- A wake-up for the waiters on `channel` (delivered at commit, to every client LISTENing on the schema's channel).
CREATE OR REPLACE FUNCTION @schema.notify(channel text, message text) RETURNS void LANGUAGE sql VOLATILE AS $$
  SELECT pg_notify(@channel, $2 || ' ' || $1)
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
