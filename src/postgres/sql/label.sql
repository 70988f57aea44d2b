-- Client labels (src/internal/label.ts): the same operations as src/lua/label/*.lua, with the same keys, arguments
-- and replies. One row per client that has a `label` option, keyed by its label key (Keys.clientLabel, by the
-- fingerprint of its client id), refreshed while the client lives and gone 60 s after it stops.

CREATE TABLE IF NOT EXISTS @schema.client_label (
  key text PRIMARY KEY,
  label text NOT NULL,
  expires_at bigint NOT NULL
);

-- Deletes up to 100 expired labels.
CREATE OR REPLACE FUNCTION @schema.label_sweep(now_ bigint) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  DELETE FROM @schema.client_label c WHERE c.key IN (SELECT key FROM @schema.client_label WHERE expires_at <= now_ LIMIT 100) AND c.expires_at <= now_;
END
$$;

-- keys: label key; args: label, ttl ms; reply: 1
CREATE OR REPLACE FUNCTION @schema.label_set(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint;
BEGIN
  PERFORM @schema.serialize(k[1]);
  now_ := @schema.now_ms();
  IF random() < 0.01 THEN
    PERFORM @schema.label_sweep(now_);
  END IF;
  INSERT INTO @schema.client_label AS c (key, label, expires_at) VALUES (k[1], a[1], now_ + a[2]::bigint)
  ON CONFLICT (key) DO UPDATE SET label = excluded.label, expires_at = excluded.expires_at;
  RETURN to_jsonb(1);
END
$$;

-- keys: label key; reply: the label, or null (none set, or the client is gone)
CREATE OR REPLACE FUNCTION @schema.label_get(k text[], a text[]) RETURNS jsonb LANGUAGE sql VOLATILE AS $$
  SELECT to_jsonb(c.label) FROM @schema.client_label c WHERE c.key = k[1] AND c.expires_at > @schema.now_ms()
$$;

-- keys: label key; reply: 1 when there was one (it is deleted), else 0
CREATE OR REPLACE FUNCTION @schema.label_delete(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  live boolean;
BEGIN
  PERFORM @schema.serialize(k[1]);
  DELETE FROM @schema.client_label c WHERE c.key = k[1] RETURNING c.expires_at > @schema.now_ms() INTO live;
  RETURN to_jsonb(CASE WHEN live THEN 1 ELSE 0 END);
END
$$;
