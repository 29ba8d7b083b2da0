-- Uploads at 1M proxies (docs/benchmarks.md). A freshly uploaded proxy has
-- never been checked: alive = false, reputation 'unknown'. The filter
-- indexes only serve filters that select checked proxies (status=alive,
-- protocol, a reputation label other than 'unknown', alive + country), so
-- they are partial and an upload no longer writes to them; every proxy is
-- in the primary key, the identity index, next_check_at and (user_id, id),
-- which serves the unfiltered list and every other filter in id order (a
-- wide copy of it with the filter columns was tried: PostgreSQL preferred a
-- sequential scan for the large counts anyway, and deep unfiltered pages
-- got twice as slow). The country index was the most expensive
-- one to keep on upload (new rows land in the middle of the index, one
-- place per country): country-only totals come from user_proxy_counts, and
-- a country filter is served by (user_id, id), or by the alive one below
-- with status=alive. Measured on the 2-core bench machine, 400k new proxies
-- into a table holding 1M: WAL 391 MB before, 187 MB after; at the database
-- alone 42-55k rows/s before, 72-100k rows/s after with the COPY path
-- (docs/benchmarks.md, item 8 and 9).
-- Prisma: `where: raw(...)` (preview feature partialIndexes) in schema.prisma.

-- DropIndex
DROP INDEX "proxies_user_id_alive_id_idx";

-- DropIndex
DROP INDEX "proxies_user_id_country_id_idx";

-- DropIndex
DROP INDEX "proxies_user_id_reputation_label_id_idx";

-- DropIndex
DROP INDEX "proxies_user_id_reputation_score_id_idx";

-- CreateIndex
CREATE INDEX "proxies_alive_user_id_id_idx" ON "proxies"("user_id", "id", "country", "reputation_label", "alive_protocols", "anonymity_level", "estimated_type", "response_time", "attempt") WHERE alive;

-- CreateIndex
CREATE INDEX "proxies_alive_user_id_country_id_idx" ON "proxies"("user_id", "country", "id", "reputation_label", "alive_protocols", "anonymity_level", "estimated_type", "response_time", "attempt") WHERE alive;

-- CreateIndex
CREATE INDEX "proxies_rated_user_id_reputation_label_id_idx" ON "proxies"("user_id", "reputation_label", "id", "alive", "country", "alive_protocols", "anonymity_level", "estimated_type", "response_time", "attempt") WHERE reputation_label <> 'unknown';

-- CreateIndex
CREATE INDEX "proxies_rated_user_id_reputation_score_id_idx" ON "proxies"("user_id", "reputation_score" DESC, "id") WHERE reputation_label <> 'unknown';
