import { scraperUserAgent } from "./robots-cache.js";

describe("scraperUserAgent", () => {
  it("names the operator's page when one is set, and no page otherwise", () => {
    expect(scraperUserAgent("1.2.3", "https://proxies.example.net/about")).toBe("Roost/1.2.3 (+https://proxies.example.net/about)");
    expect(scraperUserAgent("1.2.3")).toBe("Roost/1.2.3");
    expect(scraperUserAgent("1.2.3", "")).toBe("Roost/1.2.3");
  });
});
