import { ConfigError } from "@roost/config";
import { scraperConfigFromEnv } from "./scraper.config.js";

describe("scraper config", () => {
  it("names no project page until the operator sets an http(s) SCRAPER_PROJECT_URL", () => {
    expect(scraperConfigFromEnv({}).SCRAPER_PROJECT_URL).toBeUndefined();
    expect(scraperConfigFromEnv({ SCRAPER_PROJECT_URL: " " }).SCRAPER_PROJECT_URL).toBeUndefined();
    expect(scraperConfigFromEnv({ SCRAPER_PROJECT_URL: "https://proxies.example.net/" }).SCRAPER_PROJECT_URL).toBe("https://proxies.example.net/");
    expect(() => scraperConfigFromEnv({ SCRAPER_PROJECT_URL: "ftp://proxies.example.net/" })).toThrow(ConfigError);
    expect(() => scraperConfigFromEnv({ SCRAPER_PROJECT_URL: "not a url" })).toThrow(ConfigError);
  });
});
