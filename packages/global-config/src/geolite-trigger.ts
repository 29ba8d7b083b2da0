import type { GlobalConfig } from "./global-config.schema.js";

/**
 * True when a save should download GeoLite now: a key is set, auto-update is
 * on, and the key, the download URL or auto-update itself just changed.
 */
export function geoLiteUpdateWanted(config: GlobalConfig, previous: GlobalConfig): boolean {
  const now = config.geolite;
  const before = previous.geolite;
  if (now.api_key === "" || !now.auto_update) return false;
  return now.api_key !== before.api_key || !before.auto_update || now.download_base_url !== before.download_base_url;
}
