-- The renewal shared by the holds kept with their owner (src/lua/owned/renew-1.lua): the read-write lock's writer, the
-- cache loader's load lock and the fair lock. Each keeps its holds in a table of its own; a key lives in exactly one
-- of them (their names end differently, see src/keys.ts), so the renewal asks each in turn (a miss costs one index
-- probe). Never revives an expired hold. A family whose holds come to renew through it adds its table here.
-- keys: the hold; args: owner, lease ms; reply: 1 extended, 0 when this owner no longer holds it
CREATE OR REPLACE FUNCTION @schema.owned_renew(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
BEGIN
  IF @schema.rw_writer_renew(k[1], a[1], a[2]::bigint) THEN
    RETURN to_jsonb(1);
  END IF;
  UPDATE @schema.cache_load SET expires_at = now_ + a[2]::bigint
  WHERE cache_load.key = k[1] AND cache_load.owner = a[1] AND cache_load.expires_at > now_;
  IF FOUND THEN
    RETURN to_jsonb(1);
  END IF;
  -- the fair lock (a grant not yet claimed is its grantee's too, as on Redis)
  UPDATE @schema.fair_lock l SET expires_at = now_ + a[2]::bigint WHERE l.key = k[1] AND l.owner = a[1] AND l.expires_at > now_;
  IF FOUND THEN
    RETURN to_jsonb(1);
  END IF;
  RETURN to_jsonb(0);
END
$$;
