export { createScraperService } from "./scraper.service.js";
export type { ScraperDeps, ScraperService } from "./scraper.service.js";
export { scraperConfigFromEnv, scraperEnvSchema, scraperInfraFromEnv, scraperInfraSchema } from "./config/scraper.config.js";
export type { ScraperConfig } from "./config/scraper.config.js";
