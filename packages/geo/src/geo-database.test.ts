import { readFile } from "node:fs/promises";
import { Reader, type CountryResponse } from "maxmind";
import { formatIpv4, isReservedIpv4 } from "@roost/net";
import { defaultCountryMmdbPath, estimateType, openGeoDatabase, RangeTable, type GeoDatabase } from "./index.js";

describe("offline geo databases", () => {
  let geo: GeoDatabase;
  beforeAll(async () => {
    geo = await openGeoDatabase();
  });

  it("knows well-known networks", () => {
    expect(geo.lookup("8.8.8.8")).toEqual({ country: "US", asn: { asn: 15169, org: "Google LLC" }, estimatedType: "datacenter" });
    expect(geo.lookup("5.9.0.1")).toMatchObject({ country: "DE", asn: { asn: 24940 }, estimatedType: "datacenter" });
    expect(geo.lookup("24.5.6.7")).toMatchObject({ country: "US", asn: { asn: 7922 }, estimatedType: "residential" });
    expect(geo.lookupCountry(134744072)).toBe("US"); // 8.8.8.8 as a number
  });

  it("answers N/A and no AS for reserved ranges and non-addresses, whatever the data says", () => {
    for (const ip of ["10.0.0.1", "127.0.0.1", "192.168.1.1", "224.0.0.1", "not-an-ip", "2001:db8::1"]) {
      expect(geo.lookup(ip)).toEqual({ country: "N/A", asn: null, estimatedType: "unknown" });
    }
  });

  it("agrees with maxmind's own reader on the MMDB file (the flattened tree is exact)", async () => {
    const reader = new Reader<CountryResponse>(await readFile(defaultCountryMmdbPath()));
    let state = 12345;
    let compared = 0;
    while (compared < 3000) {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      const address = (state * 2654435761) >>> 0;
      if (isReservedIpv4(address)) continue;
      const record = reader.get(formatIpv4(address)) as { country_code?: string } | null;
      expect([formatIpv4(address), geo.lookupCountry(address)]).toEqual([formatIpv4(address), record?.country_code ?? "N/A"]);
      compared++;
    }
  });
});

describe("RangeTable", () => {
  it("finds the range holding an address and nothing in gaps", () => {
    const builder = RangeTable.builder(2);
    builder.add(10, 19, 0);
    builder.add(20, 29, 0); // merges with the previous
    builder.add(40, 49, 1);
    builder.add(45, 60, 2); // overlaps: dropped
    const table = builder.build();
    expect(table.size).toBe(2);
    expect([9, 10, 25, 29, 30, 39, 40, 49, 50].map((a) => table.lookup(a))).toEqual([-1, 0, 0, 0, -1, -1, 1, 1, -1]);
  });

  it("agrees with a scan of every range, for ranges within, across and between /16s", () => {
    // A seeded generator: the same ranges every run.
    let seed = 12345;
    const random = (below: number): number => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed % below;
    };
    const ranges: [number, number, number][] = [];
    let next = random(1 << 20);
    while (next < 2 ** 32 - 1 && ranges.length < 20_000) {
      // Mostly small ranges, some spanning many /16s, with gaps of every size between them.
      const length = random(10) === 0 ? random(1 << 24) : random(1 << 10);
      const end = Math.min(next + length, 2 ** 32 - 1);
      ranges.push([next, end, ranges.length % 7]);
      next = end + 1 + (random(3) === 0 ? random(1 << 22) : 0);
    }
    const builder = RangeTable.builder();
    for (const [start, end, value] of ranges) builder.add(start, end, value);
    const table = builder.build();
    const scan = (address: number): number => ranges.find(([start, end]) => start <= address && address <= end)?.[2] ?? -1;
    const probes = [0, 1, 65535, 65536, 2 ** 32 - 1, 2 ** 32 - 65536];
    for (const [start, end] of ranges.filter((_, i) => i % 50 === 0)) probes.push(start, end, start - 1, end + 1, (start & ~0xffff) >>> 0, (end | 0xffff) >>> 0);
    for (let i = 0; i < 2000; i++) probes.push(random(2 ** 32));
    const valid = probes.filter((a) => a >= 0 && a < 2 ** 32);
    expect(valid.map((a) => table.lookup(a))).toEqual(valid.map(scan));
  });
});

describe("estimateType", () => {
  it.each([
    ["Amazon.com, Inc.", "datacenter"],
    ["Hetzner Online GmbH", "datacenter"],
    ["DigitalOcean, LLC", "datacenter"],
    ["OVH SAS", "datacenter"],
    ["T-Mobile USA, Inc.", "mobile"],
    ["Vodafone GmbH", "mobile"],
    ["Comcast Cable Communications, LLC", "residential"],
    ["Deutsche Telekom AG", "residential"],
    ["Orange S.A.", "residential"],
    ["Lancashire County Council", "unknown"],
    ["", "unknown"],
  ])("%s → %s", (org, type) => {
    expect(estimateType({ asn: 1, org })).toBe(type);
  });

  // GeoLite2-ASN names many networks by their registry handle, not the company name.
  it.each([
    ["AMAZON-02", "datacenter"],
    ["GOOGLE-CLOUD-PLATFORM", "datacenter"],
    ["MICROSOFT-CORP-MSN-AS-BLOCK", "datacenter"],
    ["CLOUDFLARENET", "datacenter"],
    ["AS-CHOOPA", "datacenter"],
    ["HURRICANE", "datacenter"],
    ["PONYNET", "datacenter"],
    ["CELLCO-PART", "mobile"],
    ["T-MOBILE-AS21928", "mobile"],
    ["ATT-MOBILITY-LLC-AS20057", "mobile"],
    ["CHINAMOBILE-CN China Mobile Communications Group Co., Ltd.", "mobile"],
    ["COMCAST-7922", "residential"],
    ["TWC-11427-SOCAL", "residential"],
    ["ASN-CXA-ALL-CCI-22773-RDC", "residential"],
    ["BT-UK-AS BTnet UK Regional network", "residential"],
    ["LGI-UPC", "residential"],
    ["KIXS-AS-KR Korea Telecom", "residential"],
    ["ATT-INTERNET4", "residential"],
    ["LEVEL3", "unknown"],
  ])("GeoLite name %s → %s", (org, type) => {
    expect(estimateType({ asn: 1, org })).toBe(type);
  });

  it("is unknown without an AS", () => {
    expect(estimateType(null)).toBe("unknown");
  });
});
