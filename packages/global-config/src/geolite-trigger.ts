import type { GlobalConfig } from "./global-config.schema.js";

/**
 * True when a save should run the GeoLite update now: a key is set,
 * auto-update is on, and the key, the download URL or auto-update itself just
 * changed; or the key was cleared (the offline databases serve again).
 */
export function geoLiteUpdateWanted(config: GlobalConfig, previous: GlobalConfig): boolean {
  const now = config.geolite;
  const before = previous.geolite;
  if (now.api_key === "") return before.api_key !== "";
  if (!now.auto_update) return false;
  return now.api_key !== before.api_key || !before.auto_update || now.download_base_url !== before.download_base_url;
}
