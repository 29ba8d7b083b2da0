-- Dashboard breakdowns without scanning a user's proxies on every read
-- (docs/dashboard.md). Grouping 1M rows by country or reputation label took
-- ~200 ms each on the index-only scans; these tables make the dashboard a
-- few index lookups.
--
-- user_proxy_counts is an append-only log of signed deltas written by
-- statement-level triggers on "proxies" (one aggregated INSERT per statement,
-- never an UPDATE of a shared counter row, so concurrent uploads and checker
-- batches of one user never wait on each other or deadlock). The reader sums
-- a user's rows and folds them into one row per key when they pile up.

-- CreateTable
CREATE TABLE "user_proxy_counts" (
    "id" BIGSERIAL NOT NULL,
    "user_id" INTEGER NOT NULL,
    "dimension" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "delta" BIGINT NOT NULL,

    CONSTRAINT "user_proxy_counts_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "user_proxy_counts_user_id_dimension_value_idx" ON "user_proxy_counts"("user_id", "dimension", "value");

-- CreateIndex: the dashboard's top_reputation_proxy walks this from the top.
CREATE INDEX "proxies_user_id_reputation_score_id_idx" ON "proxies"("user_id", "reputation_score" DESC, "id");

-- Triggers: transition tables need one trigger per event; one function serves all three.
CREATE FUNCTION "roost_user_proxy_counts_capture"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO "user_proxy_counts" ("user_id", "dimension", "value", "delta")
    SELECT "user_id", 'country', "country", count(*) FROM "roost_new_rows" GROUP BY "user_id", "country"
    UNION ALL
    SELECT "user_id", 'reputation', "reputation_label", count(*) FROM "roost_new_rows" GROUP BY "user_id", "reputation_label";
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO "user_proxy_counts" ("user_id", "dimension", "value", "delta")
    SELECT "user_id", 'country', "country", -count(*) FROM "roost_old_rows" GROUP BY "user_id", "country"
    UNION ALL
    SELECT "user_id", 'reputation', "reputation_label", -count(*) FROM "roost_old_rows" GROUP BY "user_id", "reputation_label";
  ELSE
    -- Only keys whose count changed: a checker batch that keeps every
    -- country and label writes nothing.
    INSERT INTO "user_proxy_counts" ("user_id", "dimension", "value", "delta")
    SELECT "user_id", "dimension", "value", sum("delta") FROM (
      SELECT "user_id", 'country' AS "dimension", "country" AS "value", 1 AS "delta" FROM "roost_new_rows"
      UNION ALL SELECT "user_id", 'country', "country", -1 FROM "roost_old_rows"
      UNION ALL SELECT "user_id", 'reputation', "reputation_label", 1 FROM "roost_new_rows"
      UNION ALL SELECT "user_id", 'reputation', "reputation_label", -1 FROM "roost_old_rows"
    ) AS "changes"
    GROUP BY "user_id", "dimension", "value"
    HAVING sum("delta") <> 0;
  END IF;
  RETURN NULL;
END
$$;

CREATE FUNCTION "roost_user_proxy_counts_truncate"() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "user_proxy_counts";
  RETURN NULL;
END
$$;

-- Created before the backfill: CREATE TRIGGER locks out writers until this
-- migration commits, so every row is counted exactly once.
CREATE TRIGGER "proxies_counts_insert" AFTER INSERT ON "proxies"
  REFERENCING NEW TABLE AS "roost_new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "roost_user_proxy_counts_capture"();
CREATE TRIGGER "proxies_counts_update" AFTER UPDATE ON "proxies"
  REFERENCING OLD TABLE AS "roost_old_rows" NEW TABLE AS "roost_new_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "roost_user_proxy_counts_capture"();
CREATE TRIGGER "proxies_counts_delete" AFTER DELETE ON "proxies"
  REFERENCING OLD TABLE AS "roost_old_rows"
  FOR EACH STATEMENT EXECUTE FUNCTION "roost_user_proxy_counts_capture"();
CREATE TRIGGER "proxies_counts_truncate" AFTER TRUNCATE ON "proxies"
  FOR EACH STATEMENT EXECUTE FUNCTION "roost_user_proxy_counts_truncate"();

-- Backfill.
INSERT INTO "user_proxy_counts" ("user_id", "dimension", "value", "delta")
SELECT "user_id", 'country', "country", count(*) FROM "proxies" GROUP BY "user_id", "country"
UNION ALL
SELECT "user_id", 'reputation', "reputation_label", count(*) FROM "proxies" GROUP BY "user_id", "reputation_label";
