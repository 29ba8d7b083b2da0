import type { DbHandle } from "@roost/db";
import type { GlobalConfig } from "@roost/global-config";
import { PROXY_COLUMNS, SCRAPE_SOURCE_LIST_COLUMNS, type UserSettingsUpdate, type UserSettingsView } from "./user-settings.schema.js";

/** A new user's settings come from the global config at the moment of registration. */
export async function createDefaultSettings(db: DbHandle, userId: number, config: GlobalConfig): Promise<void> {
  await db.userSettings.create({
    data: {
      userId,
      httpProtocol: config.protocols.http,
      httpsProtocol: config.protocols.https,
      socks4Protocol: config.protocols.socks4,
      socks5Protocol: config.protocols.socks5,
      timeoutMs: config.checker.timeout_ms,
      retries: config.checker.retries,
      useHttpsForSocks: config.checker.use_https_for_socks,
      transportProtocol: "tcp",
      autoRemoveFailingProxies: false,
      autoRemoveFailureThreshold: 3,
      proxyListColumns: [...PROXY_COLUMNS],
      scrapeSourceProxyColumns: [...PROXY_COLUMNS],
      scrapeSourceListColumns: [...SCRAPE_SOURCE_LIST_COLUMNS],
    },
  });
  if (config.checker.judges.length > 0) {
    await db.userJudge.createMany({
      data: config.checker.judges.map((judge, position) => ({ userId, url: judge.url, regex: judge.regex, position })),
      skipDuplicates: true,
    });
  }
}

export async function readSettings(db: DbHandle, userId: number): Promise<UserSettingsView | null> {
  const [settings, judges, sources] = await Promise.all([
    db.userSettings.findUnique({ where: { userId } }),
    db.userJudge.findMany({ where: { userId }, orderBy: [{ position: "asc" }, { id: "asc" }] }),
    db.scrapeSource.findMany({ where: { userId }, orderBy: { id: "asc" }, select: { url: true } }),
  ]);
  if (!settings) return null;
  return {
    http_protocol: settings.httpProtocol,
    https_protocol: settings.httpsProtocol,
    socks4_protocol: settings.socks4Protocol,
    socks5_protocol: settings.socks5Protocol,
    timeout: settings.timeoutMs,
    retries: settings.retries,
    UseHttpsForSocks: settings.useHttpsForSocks,
    transport_protocol: settings.transportProtocol,
    auto_remove_failing_proxies: settings.autoRemoveFailingProxies,
    auto_remove_failure_threshold: settings.autoRemoveFailureThreshold,
    judges: judges.map((j) => ({ url: j.url, regex: j.regex })),
    scraping_sources: sources.map((s) => s.url),
    proxy_list_columns: settings.proxyListColumns,
    scrape_source_proxy_columns: settings.scrapeSourceProxyColumns,
    scrape_source_list_columns: settings.scrapeSourceListColumns,
  };
}

/** Applies a validated subset; keys that are absent keep their values. */
export async function updateSettings(db: DbHandle, userId: number, update: UserSettingsUpdate): Promise<void> {
  await db.userSettings.update({
    where: { userId },
    data: {
      httpProtocol: update.http_protocol,
      httpsProtocol: update.https_protocol,
      socks4Protocol: update.socks4_protocol,
      socks5Protocol: update.socks5_protocol,
      timeoutMs: update.timeout,
      retries: update.retries,
      useHttpsForSocks: update.UseHttpsForSocks,
      transportProtocol: update.transport_protocol,
      autoRemoveFailingProxies: update.auto_remove_failing_proxies,
      autoRemoveFailureThreshold: update.auto_remove_failure_threshold,
      proxyListColumns: update.proxy_list_columns,
      scrapeSourceProxyColumns: update.scrape_source_proxy_columns,
      scrapeSourceListColumns: update.scrape_source_list_columns,
    },
  });
  if (update.judges) {
    await db.userJudge.deleteMany({ where: { userId } });
    await db.userJudge.createMany({
      data: update.judges.map((judge, position) => ({ userId, url: judge.url, regex: judge.regex, position })),
    });
  }
}
