-- `alive` means alive on at least one protocol at that protocol's latest
-- check (DESIGN.md, Proxies), which is exactly `alive_protocols <> 0`. The
-- list's status filter reads one column and its protocol filter the other,
-- so the two must never disagree: alive + dead = all only holds, and
-- protocol=x only selects alive proxies (it adds `alive` to use the partial
-- indexes of 20261124000000), when they agree. Uploads write
-- false/0; the checker writes both together. The mask has four bits
-- (http 1, https 2, socks4 4, socks5 8).
ALTER TABLE "proxies" ADD CONSTRAINT "proxies_alive_matches_protocols"
  CHECK ("alive" = ("alive_protocols" <> 0) AND "alive_protocols" BETWEEN 0 AND 15);
