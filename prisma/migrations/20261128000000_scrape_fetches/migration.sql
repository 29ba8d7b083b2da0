-- Scraping (DESIGN.md "Scraping"): a source URL followed by several users is
-- fetched once per interval, so the fetch state (conditional-request
-- validators, schedule, last outcome and the proxies it found) lives per URL.
CREATE TABLE "scrape_fetches" (
    "id" SERIAL NOT NULL,
    "url" TEXT NOT NULL,
    "etag" TEXT,
    "last_modified" TEXT,
    "next_fetch_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_fetched_at" TIMESTAMPTZ(3),
    "last_status" TEXT,
    "last_error" TEXT,
    "last_duration_ms" INTEGER,
    "proxy_lines" TEXT,

    CONSTRAINT "scrape_fetches_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "scrape_fetches_url_key" ON "scrape_fetches"("url");
CREATE INDEX "scrape_fetches_next_fetch_at_idx" ON "scrape_fetches"("next_fetch_at");

-- Followers of a URL are found by it.
CREATE INDEX "scrape_sources_url_idx" ON "scrape_sources"("url");

-- "Proxies found by the last scrape" are the links whose last_seen_at equals
-- the source's last_scraped_at.
ALTER TABLE "proxy_sources" ADD COLUMN "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP;

-- Every URL already followed gets its fetch state, due at once.
INSERT INTO "scrape_fetches" ("url") SELECT DISTINCT "url" FROM "scrape_sources" ON CONFLICT DO NOTHING;
