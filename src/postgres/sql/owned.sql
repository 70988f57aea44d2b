-- owned/renew (src/lua/owned/renew-1.lua): extends the lease of a hold kept with its owner (the fair lock; on Redis
-- also the read-write lock's writer and getOrLoad's load lock). Never revives an expired hold.
-- keys: the hold's record; args: owner, lease ms; reply: 1 extended, 0 this owner no longer holds it
--
-- It dispatches on the table that holds the key: each family whose holds renew through owned/renew tries its own
-- table in turn (key names differ by family, so at most one matches; a miss costs one index probe). A family that
-- comes to use it adds its UPDATE here, before the last RETURN, rather than defining the function again elsewhere.
CREATE OR REPLACE FUNCTION @schema.owned_renew(k text[], a text[]) RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  now_ bigint := @schema.now_ms();
BEGIN
  -- the fair lock (a grant not yet claimed is its grantee's too, as on Redis)
  UPDATE @schema.fair_lock l SET expires_at = now_ + a[2]::bigint WHERE l.key = k[1] AND l.owner = a[1] AND l.expires_at > now_;
  IF FOUND THEN
    RETURN to_jsonb(1);
  END IF;
  RETURN to_jsonb(0);
END
$$;
