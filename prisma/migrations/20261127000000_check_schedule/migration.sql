-- The check scheduler claims each user's due proxies oldest first, one user
-- at a time (fair across users): (user_id, next_check_at) serves both the
-- probe for a user's first due proxy and the claim of a batch. It replaces
-- the index on next_check_at alone, which no query uses.
DROP INDEX "proxies_next_check_at_idx";
CREATE INDEX "proxies_user_id_next_check_at_idx" ON "proxies"("user_id", "next_check_at");

-- Every protocol enabled by default has a global judge (DESIGN.md "Checking"):
-- an https judge joins the default http one. Users without a judge for a
-- scheme get the global judges of that scheme, after their own.
INSERT INTO "user_judges" ("user_id", "url", "regex", "position")
SELECT u."id", j."url", j."regex", COALESCE((SELECT max(o."position") + 1 FROM "user_judges" o WHERE o."user_id" = u."id"), 0) + j."n"
  FROM "users" u
 CROSS JOIN (VALUES ('http://azenv.net/', 'default', 0, 'http:'), ('https://pool.proxyspace.pro/judge.php', 'default', 1, 'https:')) AS j("url", "regex", "n", "scheme")
 WHERE NOT EXISTS (SELECT 1 FROM "user_judges" o WHERE o."user_id" = u."id" AND o."url" LIKE j."scheme" || '//%')
ON CONFLICT ("user_id", "url") DO NOTHING;
