-- GeoLite2 databases downloaded with the admin's key (docs/geo.md "GeoLite"),
-- kept in PostgreSQL so every instance can load them whatever its DATA_DIR.
-- One row per edition; a new download replaces the row.
CREATE TABLE "geolite_databases" (
    "edition" TEXT NOT NULL,
    "data" BYTEA NOT NULL,
    "sha256" TEXT NOT NULL,
    "built_at" TIMESTAMPTZ(3) NOT NULL,
    "downloaded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "geolite_databases_pkey" PRIMARY KEY ("edition")
);

-- The update's state, one row (id = 1): what admins read to see whether the
-- last download worked, and the cursor of the re-derivation of existing
-- proxies (NULL when no pass is pending).
CREATE TABLE "geolite_update_status" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "last_attempt_at" TIMESTAMPTZ(3),
    "last_success_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "last_error_at" TIMESTAMPTZ(3),
    "rederive_after_id" INTEGER,
    "rederive_updated" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "geolite_update_status_pkey" PRIMARY KEY ("id")
);
