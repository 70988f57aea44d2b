-- The count-down latch (src/primitives/count-down-latch.ts): the same operations as src/lua/latch/*.lua, with the
-- same keys, arguments and replies. A latch is one row holding its count; a latch with no row (or an expired one) is
-- open. `expires_at` NULL: the latch has no TTL (the `ttl` option of trySetCount was not given).

CREATE TABLE IF NOT EXISTS @schema.latch (
  key text PRIMARY KEY,
  count bigint NOT NULL,
  expires_at bigint
);

-- Deletes up to 100 expired latches (they are open already: no row should outlive its use).
CREATE OR REPLACE FUNCTION @schema.latch_sweep(now_ bigint) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  DELETE FROM @schema.latch l WHERE l.key IN (SELECT key FROM @schema.latch WHERE expires_at <= now_ LIMIT 100) AND l.expires_at <= now_;
END
$$;

-- keys: latch; args: count, ttl ms ('0': none); reply: 1 set, 0 the latch exists already (unchanged)
CREATE OR REPLACE FUNCTION @schema.latch_try_set(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
  ttl bigint := a[2]::bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  IF random() < 0.01 THEN
    PERFORM @schema.latch_sweep(now_);
  END IF;
  -- an expired latch is absent: it is replaced
  INSERT INTO @schema.latch AS l (key, count, expires_at)
  VALUES (k[1], a[1]::bigint, CASE WHEN ttl > 0 THEN now_ + ttl END)
  ON CONFLICT (key) DO UPDATE SET count = excluded.count, expires_at = excluded.expires_at
  WHERE l.expires_at <= now_;
  RETURN to_jsonb(CASE WHEN FOUND THEN 1 ELSE 0 END);
END
$$;

-- keys: latch; args: channel; reply: the count left (0 when the latch is open, also when it did not exist)
CREATE OR REPLACE FUNCTION @schema.latch_count_down(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
  left_ bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  UPDATE @schema.latch SET count = latch.count - 1
  WHERE latch.key = k[1] AND (latch.expires_at IS NULL OR latch.expires_at > now_)
  RETURNING latch.count INTO left_;
  IF NOT FOUND THEN
    RETURN to_jsonb(0);
  END IF;
  IF left_ <= 0 THEN
    DELETE FROM @schema.latch WHERE latch.key = k[1];
    PERFORM @schema.notify(a[1], 'a');
    RETURN to_jsonb(0);
  END IF;
  RETURN to_jsonb(left_);
END
$$;

-- keys: latch; reply: [count (0 when absent), pttl (-1 no TTL, -2 absent)]
CREATE OR REPLACE FUNCTION @schema.latch_state(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
  r @schema.latch%ROWTYPE;
BEGIN
  SELECT * INTO r FROM @schema.latch WHERE latch.key = k[1] AND (latch.expires_at IS NULL OR latch.expires_at > now_);
  IF NOT FOUND THEN
    RETURN jsonb_build_array(0, -2);
  END IF;
  RETURN jsonb_build_array(r.count, coalesce(r.expires_at - now_, -1));
END
$$;

-- keys: latch; args: channel; reply: 1 when the latch existed (it is deleted: open, every waiter woken), else 0
CREATE OR REPLACE FUNCTION @schema.latch_delete(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  live boolean;
BEGIN
  PERFORM @schema.serialize(k[1]);
  DELETE FROM @schema.latch WHERE latch.key = k[1]
  RETURNING latch.expires_at IS NULL OR latch.expires_at > @schema.now_ms() INTO live;
  IF live THEN
    PERFORM @schema.notify(a[1], 'a');
    RETURN to_jsonb(1);
  END IF;
  RETURN to_jsonb(0);
END
$$;
