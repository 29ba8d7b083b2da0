-- The search box's IP prefix (`ip LIKE '45.1%'`, a range scan thanks to
-- `COLLATE "C"`) is planned from the ip column's histogram. With the default
-- 100 buckets, a bucket holds 1% of a user's addresses and a prefix that
-- selects less than that falls inside one, so the estimate depended on which
-- rows ANALYZE happened to sample: at 1M proxies, `45.1%` (6,800 rows) was
-- estimated at 100 or at 10,101 from one ANALYZE to the next, and the low
-- estimate picked a plan that fetched every matching row from the heap to
-- sort it by id, ~1.7x the CPU of walking the primary key (search p50
-- 35-39 ms against 20-24 ms at 16 clients; docs/benchmarks.md, item 27).
-- 1,000 buckets keep the estimate within ~15% of the truth. ANALYZE then
-- samples 300,000 rows instead of 30,000 (a few hundred ms at 1M rows).
ALTER TABLE "proxies" ALTER COLUMN "ip" SET STATISTICS 1000;
ANALYZE "proxies";
