-- The ids of one unfiltered list page (docs/benchmarks.md, item 12).
--
-- The page's statement used to find its ids in a subquery with LIMIT and
-- OFFSET as parameters. PostgreSQL re-planned it on every run: a generic
-- plan, with the limit unknown, looks far costlier to the planner than the
-- custom one, so the plan cache never settled on it, and planning was about
-- a third of the statement's CPU. Here the ids come from a PL/pgSQL
-- function whose one query always runs its cached generic plan (an
-- index-only scan of (user_id, id) that stops after offset + limit
-- entries, whatever the numbers); the page statement reads those rows by
-- primary key with `id = ANY(...)`, and with no LIMIT left in it the plan
-- cache keeps its generic plan too.
CREATE FUNCTION "roost_proxy_page_ids"("owner" INTEGER, "page_limit" BIGINT, "page_offset" BIGINT) RETURNS INTEGER[]
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
  RETURN ARRAY(SELECT "id" FROM "proxies" WHERE "user_id" = "owner" ORDER BY "id" LIMIT "page_limit" OFFSET "page_offset");
END
$$;
