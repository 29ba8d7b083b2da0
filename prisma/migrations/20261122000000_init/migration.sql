-- Initial Roost schema. Hand-written (prisma migrate cannot run offline);
-- names follow Prisma's conventions so `prisma migrate deploy` stays valid.

-- CreateTable
CREATE TABLE "users" (
    "id" SERIAL NOT NULL,
    "email" TEXT NOT NULL,
    "password_hash" TEXT NOT NULL,
    "role" TEXT NOT NULL DEFAULT 'user',
    "tokens_revoked_before" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "revoked_tokens" (
    "jti" TEXT NOT NULL,
    "user_id" INTEGER NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "revoked_tokens_pkey" PRIMARY KEY ("jti")
);

-- CreateTable
CREATE TABLE "user_settings" (
    "user_id" INTEGER NOT NULL,
    "http_protocol" BOOLEAN NOT NULL,
    "https_protocol" BOOLEAN NOT NULL,
    "socks4_protocol" BOOLEAN NOT NULL,
    "socks5_protocol" BOOLEAN NOT NULL,
    "timeout_ms" INTEGER NOT NULL,
    "retries" INTEGER NOT NULL,
    "use_https_for_socks" BOOLEAN NOT NULL,
    "transport_protocol" TEXT NOT NULL DEFAULT 'tcp',
    "auto_remove_failing_proxies" BOOLEAN NOT NULL DEFAULT false,
    "auto_remove_failure_threshold" INTEGER NOT NULL DEFAULT 3,
    "proxy_list_columns" TEXT[],
    "scrape_source_proxy_columns" TEXT[],
    "scrape_source_list_columns" TEXT[],
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "user_settings_pkey" PRIMARY KEY ("user_id")
);

-- CreateTable
CREATE TABLE "user_judges" (
    "id" SERIAL NOT NULL,
    "user_id" INTEGER NOT NULL,
    "url" TEXT NOT NULL,
    "regex" TEXT NOT NULL DEFAULT 'default',
    "position" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "user_judges_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "proxies" (
    "id" SERIAL NOT NULL,
    "user_id" INTEGER NOT NULL,
    "ip" TEXT NOT NULL,
    "port" INTEGER NOT NULL,
    "username" TEXT NOT NULL DEFAULT '',
    "password" TEXT NOT NULL DEFAULT '',
    "scheme_hint" TEXT,
    "country" TEXT NOT NULL DEFAULT 'N/A',
    "asn" INTEGER,
    "estimated_type" TEXT NOT NULL DEFAULT 'unknown',
    "alive" BOOLEAN NOT NULL DEFAULT false,
    "alive_protocols" SMALLINT NOT NULL DEFAULT 0,
    "response_time" INTEGER NOT NULL DEFAULT 0,
    "anonymity_level" TEXT NOT NULL DEFAULT 'N/A',
    "attempt" INTEGER,
    "reputation_label" TEXT NOT NULL DEFAULT 'unknown',
    "reputation_score" REAL NOT NULL DEFAULT 0,
    "latest_check" TIMESTAMPTZ(3),
    "next_check_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "proxies_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "proxy_protocol_status" (
    "proxy_id" INTEGER NOT NULL,
    "protocol" TEXT NOT NULL,
    "alive" BOOLEAN NOT NULL,
    "attempt" INTEGER NOT NULL,
    "response_time" INTEGER NOT NULL,
    "anonymity_level" TEXT NOT NULL,
    "judge_url" TEXT NOT NULL,
    "check_count" INTEGER NOT NULL DEFAULT 0,
    "success_count" INTEGER NOT NULL DEFAULT 0,
    "checked_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "proxy_protocol_status_pkey" PRIMARY KEY ("proxy_id","protocol")
);

-- CreateTable
CREATE TABLE "proxy_reputations" (
    "proxy_id" INTEGER NOT NULL,
    "kind" TEXT NOT NULL,
    "score" REAL NOT NULL,
    "label" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "proxy_reputations_pkey" PRIMARY KEY ("proxy_id","kind")
);

-- CreateTable: range-partitioned by created_at. Partitions are created
-- ahead by the maintenance queue and dropped for retention; the default
-- partition catches anything outside them.
CREATE TABLE "proxy_statistics" (
    "id" BIGSERIAL NOT NULL,
    "proxy_id" INTEGER NOT NULL,
    "user_id" INTEGER NOT NULL,
    "protocol" TEXT NOT NULL,
    "alive" BOOLEAN NOT NULL,
    "attempt" INTEGER NOT NULL,
    "response_time" INTEGER NOT NULL,
    "anonymity_level" TEXT NOT NULL,
    "judge_url" TEXT NOT NULL,
    "regex" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "proxy_statistics_pkey" PRIMARY KEY ("id","created_at")
) PARTITION BY RANGE ("created_at");

CREATE TABLE "proxy_statistics_default" PARTITION OF "proxy_statistics" DEFAULT;

-- CreateTable
CREATE TABLE "proxy_statistic_responses" (
    "statistic_id" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "body" TEXT NOT NULL,

    CONSTRAINT "proxy_statistic_responses_pkey" PRIMARY KEY ("statistic_id","created_at")
) PARTITION BY RANGE ("created_at");

CREATE TABLE "proxy_statistic_responses_default" PARTITION OF "proxy_statistic_responses" DEFAULT;

-- CreateTable
CREATE TABLE "user_daily_stats" (
    "user_id" INTEGER NOT NULL,
    "day" DATE NOT NULL,
    "checks" BIGINT NOT NULL DEFAULT 0,
    "alive_checks" BIGINT NOT NULL DEFAULT 0,
    "scraped" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "user_daily_stats_pkey" PRIMARY KEY ("user_id","day")
);

-- CreateTable
CREATE TABLE "judge_daily_stats" (
    "user_id" INTEGER NOT NULL,
    "day" DATE NOT NULL,
    "judge_url" TEXT NOT NULL,
    "elite" BIGINT NOT NULL DEFAULT 0,
    "anonymous" BIGINT NOT NULL DEFAULT 0,
    "transparent" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "judge_daily_stats_pkey" PRIMARY KEY ("user_id","day","judge_url")
);

-- CreateTable
CREATE TABLE "scrape_sources" (
    "id" SERIAL NOT NULL,
    "user_id" INTEGER NOT NULL,
    "url" TEXT NOT NULL,
    "added_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_scraped_at" TIMESTAMPTZ(3),
    "last_status" TEXT,
    "last_error" TEXT,
    "last_duration_ms" INTEGER,
    "last_proxy_count" INTEGER,
    "next_scrape_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "scrape_sources_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "proxy_sources" (
    "proxy_id" INTEGER NOT NULL,
    "source_id" INTEGER NOT NULL,
    "added_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "proxy_sources_pkey" PRIMARY KEY ("proxy_id","source_id")
);

-- CreateTable
CREATE TABLE "rotating_proxies" (
    "id" SERIAL NOT NULL,
    "user_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "instance_id" TEXT NOT NULL,
    "protocol" TEXT NOT NULL,
    "listen_protocol" TEXT NOT NULL,
    "transport_protocol" TEXT NOT NULL DEFAULT 'tcp',
    "listen_transport_protocol" TEXT NOT NULL DEFAULT 'tcp',
    "uptime_filter_type" TEXT,
    "uptime_percentage" INTEGER,
    "listen_port" INTEGER NOT NULL,
    "auth_required" BOOLEAN NOT NULL DEFAULT false,
    "auth_username" TEXT,
    "auth_password" TEXT,
    "reputation_labels" TEXT[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "rotating_proxies_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "global_config" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "config" JSONB NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "global_config_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "email_outbox" (
    "id" BIGSERIAL NOT NULL,
    "kind" TEXT NOT NULL,
    "recipient" TEXT NOT NULL,
    "user_id" INTEGER,
    "payload" JSONB NOT NULL DEFAULT '{}',
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "locked_until" TIMESTAMPTZ(3),
    "locked_by" TEXT,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sent_at" TIMESTAMPTZ(3),

    CONSTRAINT "email_outbox_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "password_reset_tokens" (
    "id" SERIAL NOT NULL,
    "user_id" INTEGER NOT NULL,
    "token_hash" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "used_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "password_reset_tokens_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "blacklist_ranges" (
    "id" SERIAL NOT NULL,
    "cidr" INET NOT NULL,
    "source" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "blacklist_ranges_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "account_purges" (
    "user_id" INTEGER NOT NULL,
    "requested_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "account_purges_pkey" PRIMARY KEY ("user_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "users_email_key" ON "users"("email");

-- CreateIndex
CREATE INDEX "revoked_tokens_expires_at_idx" ON "revoked_tokens"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "user_judges_user_id_url_key" ON "user_judges"("user_id", "url");

-- CreateIndex
CREATE INDEX "proxies_user_id_id_idx" ON "proxies"("user_id", "id");

-- CreateIndex
CREATE INDEX "proxies_user_id_alive_id_idx" ON "proxies"("user_id", "alive", "id");

-- CreateIndex
CREATE INDEX "proxies_user_id_country_id_idx" ON "proxies"("user_id", "country", "id");

-- CreateIndex
CREATE INDEX "proxies_user_id_reputation_label_id_idx" ON "proxies"("user_id", "reputation_label", "id");

-- CreateIndex
CREATE INDEX "proxies_next_check_at_idx" ON "proxies"("next_check_at");

-- CreateIndex
CREATE UNIQUE INDEX "proxies_user_id_ip_port_username_password_key" ON "proxies"("user_id", "ip", "port", "username", "password");

-- CreateIndex
CREATE INDEX "proxy_statistics_proxy_id_created_at_idx" ON "proxy_statistics"("proxy_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "scrape_sources_next_scrape_at_idx" ON "scrape_sources"("next_scrape_at");

-- CreateIndex
CREATE UNIQUE INDEX "scrape_sources_user_id_url_key" ON "scrape_sources"("user_id", "url");

-- CreateIndex
CREATE INDEX "proxy_sources_source_id_proxy_id_idx" ON "proxy_sources"("source_id", "proxy_id");

-- CreateIndex
CREATE UNIQUE INDEX "rotating_proxies_user_id_name_key" ON "rotating_proxies"("user_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "rotating_proxies_instance_id_listen_port_key" ON "rotating_proxies"("instance_id", "listen_port");

-- CreateIndex
CREATE INDEX "email_outbox_status_next_attempt_at_idx" ON "email_outbox"("status", "next_attempt_at");

-- CreateIndex
CREATE UNIQUE INDEX "password_reset_tokens_token_hash_key" ON "password_reset_tokens"("token_hash");

-- CreateIndex
CREATE INDEX "password_reset_tokens_user_id_idx" ON "password_reset_tokens"("user_id");

-- CreateIndex
CREATE INDEX "password_reset_tokens_expires_at_idx" ON "password_reset_tokens"("expires_at");

-- CreateIndex
CREATE INDEX "blacklist_ranges_cidr_idx" ON "blacklist_ranges" USING GIST ("cidr" inet_ops);

-- CreateIndex
CREATE UNIQUE INDEX "blacklist_ranges_source_cidr_key" ON "blacklist_ranges"("source", "cidr");

-- AddForeignKey
ALTER TABLE "user_settings" ADD CONSTRAINT "user_settings_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "user_judges" ADD CONSTRAINT "user_judges_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "proxy_protocol_status" ADD CONSTRAINT "proxy_protocol_status_proxy_id_fkey" FOREIGN KEY ("proxy_id") REFERENCES "proxies"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "proxy_reputations" ADD CONSTRAINT "proxy_reputations_proxy_id_fkey" FOREIGN KEY ("proxy_id") REFERENCES "proxies"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "proxy_sources" ADD CONSTRAINT "proxy_sources_proxy_id_fkey" FOREIGN KEY ("proxy_id") REFERENCES "proxies"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "proxy_sources" ADD CONSTRAINT "proxy_sources_source_id_fkey" FOREIGN KEY ("source_id") REFERENCES "scrape_sources"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "rotating_proxies" ADD CONSTRAINT "rotating_proxies_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "password_reset_tokens" ADD CONSTRAINT "password_reset_tokens_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
