-- The ids of one page of the list's Alive or Dead tab (`status` alone), as
-- roost_proxy_page_ids (20261125000000) gives them for the unfiltered list:
-- a PL/pgSQL function whose queries always run their cached generic plans,
-- so the page statement around it can be prepared once per connection and
-- is not planned per request. Planned every time, the Dead tab's statement
-- cost PostgreSQL ~0.7 ms of CPU a page at 1M proxies against ~0.5 ms for
-- the same rows and total read by two plain statements (docs/benchmarks.md,
-- item 28). One query per status: `alive` can then use the partial index
-- on alive proxies (20261124000000), which `alive = $n` could not.
CREATE FUNCTION "roost_proxy_status_page_ids"("owner" INTEGER, "want_alive" BOOLEAN, "page_limit" BIGINT, "page_offset" BIGINT) RETURNS INTEGER[]
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  IF "want_alive" THEN
    RETURN ARRAY(SELECT "id" FROM "proxies" WHERE "user_id" = "owner" AND "alive" ORDER BY "id" LIMIT "page_limit" OFFSET "page_offset");
  END IF;
  RETURN ARRAY(SELECT "id" FROM "proxies" WHERE "user_id" = "owner" AND NOT "alive" ORDER BY "id" LIMIT "page_limit" OFFSET "page_offset");
END
$$;
