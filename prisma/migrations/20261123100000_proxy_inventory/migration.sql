-- Proxy inventory (docs/proxies.md). The list's search box matches an IP
-- prefix (`ip LIKE '1.2.%'`) and an exact `ip:port`. With the "C" collation
-- on "ip" the identity index (user_id, ip, port, username, password) serves
-- the prefix match as an index range under any database collation, so
-- search needs no index of its own (one index less to maintain on every
-- upload). Canonical dotted quads sort the same byte-wise anyway. Prisma has
-- no attribute for a column collation; schema.prisma says so in a comment.

-- AlterTable (rebuilds the indexes on "ip")
ALTER TABLE "proxies" ALTER COLUMN "ip" SET DATA TYPE TEXT COLLATE "C";
