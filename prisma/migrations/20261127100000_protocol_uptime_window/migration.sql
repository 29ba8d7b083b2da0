-- The uptime window (DESIGN.md "Checking"): per proxy and protocol, the last
-- 64 results as bits (bit 0 the newest, 1 = alive) and how many of them there
-- are, so an uptime percentage is one popcount. It replaces the cumulative
-- check_count / success_count: an old proxy's first months must not outweigh
-- its last day. Existing counts become a window of their last min(n, 64)
-- results with the successes newest (the order is not known).
ALTER TABLE "proxy_protocol_status"
  ADD COLUMN "history" BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN "history_length" SMALLINT NOT NULL DEFAULT 0;

UPDATE "proxy_protocol_status"
   SET "history_length" = LEAST("check_count", 64),
       "history" = CASE
         WHEN LEAST("success_count", "check_count", 64) >= 64 THEN -1
         ELSE (power(2::numeric, LEAST("success_count", "check_count", 64)) - 1)::bigint
       END;

ALTER TABLE "proxy_protocol_status" DROP COLUMN "check_count", DROP COLUMN "success_count";
