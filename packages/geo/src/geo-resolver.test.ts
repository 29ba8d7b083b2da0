import { createGeoResolver, createUnknownGeoDatabase, type GeoDatabase } from "./index.js";

const version = (name: string): GeoDatabase => ({ ...createUnknownGeoDatabase(), sources: { country: name, asn: name } });

/** A loader whose calls the test answers one by one. */
function scriptedLoader() {
  const calls: { resolve(db: GeoDatabase): void; reject(error: Error): void }[] = [];
  const load = () =>
    new Promise<GeoDatabase>((resolve, reject) => {
      calls.push({ resolve, reject });
    });
  return { load, calls };
}

const sourceOf = async (resolver: { get(): Promise<GeoDatabase> }) => (await resolver.get()).sources.country;

describe("createGeoResolver reload", () => {
  it("keeps serving the current database while a reload loads, then swaps", async () => {
    const { load, calls } = scriptedLoader();
    const resolver = createGeoResolver({ load });
    const first = resolver.get();
    calls[0]?.resolve(version("v1"));
    expect((await first).sources.country).toBe("v1");
    const reloading = resolver.reload();
    expect(await sourceOf(resolver)).toBe("v1");
    calls[1]?.resolve(version("v2"));
    await reloading;
    expect(await sourceOf(resolver)).toBe("v2");
  });

  it("keeps the current database when a reload fails", async () => {
    const { load, calls } = scriptedLoader();
    const resolver = createGeoResolver({ load });
    const first = resolver.get();
    calls[0]?.resolve(version("v1"));
    await first;
    const reloading = resolver.reload();
    calls[1]?.reject(new Error("database unreachable"));
    await expect(reloading).rejects.toThrow("database unreachable");
    expect(await sourceOf(resolver)).toBe("v1");
  });

  it("lets the latest reload win when an earlier one finishes last", async () => {
    const { load, calls } = scriptedLoader();
    const resolver = createGeoResolver({ load });
    const first = resolver.get();
    calls[0]?.resolve(version("v1"));
    await first;
    const older = resolver.reload();
    const newer = resolver.reload();
    calls[2]?.resolve(version("v3"));
    await newer;
    calls[1]?.resolve(version("v2"));
    await older;
    expect(await sourceOf(resolver)).toBe("v3");
  });

  it("stays lazy when it never loaded: the first get() reads the new data", async () => {
    const { load, calls } = scriptedLoader();
    const resolver = createGeoResolver({ load });
    await resolver.reload();
    expect(calls).toHaveLength(0);
    const first = resolver.get();
    calls[0]?.resolve(version("v2"));
    expect((await first).sources.country).toBe("v2");
  });
});
