import { defaultGlobalConfig, geoLiteUpdateWanted, type GlobalConfig } from "./index.js";

const withGeoLite = (geolite: Partial<GlobalConfig["geolite"]>): GlobalConfig => ({
  ...defaultGlobalConfig,
  geolite: { ...defaultGlobalConfig.geolite, ...geolite },
});

describe("geoLiteUpdateWanted", () => {
  it.each([
    ["a key is set", {}, { api_key: "k1" }, true],
    ["the key changes", { api_key: "k1" }, { api_key: "k2" }, true],
    ["the download URL changes", { api_key: "k1" }, { api_key: "k1", download_base_url: "https://mirror.example" }, true],
    ["auto-update is turned on with a key", { api_key: "k1", auto_update: false }, { api_key: "k1", auto_update: true }, true],
    ["the key is cleared", { api_key: "k1" }, { api_key: "" }, true],
    ["a key is set with auto-update off", {}, { api_key: "k1", auto_update: false }, false],
    ["only the interval changes", { api_key: "k1" }, { api_key: "k1", interval_seconds: 7200 }, false],
    ["nothing GeoLite changes and there is no key", {}, {}, false],
  ] as const)("%s → %s", (_name, before, after, wanted) => {
    expect(geoLiteUpdateWanted(withGeoLite(after), withGeoLite(before))).toBe(wanted);
  });
});
