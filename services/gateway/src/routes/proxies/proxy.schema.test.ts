import { emptyFilters, ProxyFilterError } from "@roost/inventory";
import { deleteFiltersOf } from "./proxy.schema.js";

describe("deleteFiltersOf", () => {
  it("reads Mode A and both Mode B scopes", () => {
    expect(deleteFiltersOf([5, 5, 6])).toEqual({ ...emptyFilters(), ids: [5, 6] });
    expect(deleteFiltersOf({ proxies: [5], filter: false, proxyStatus: "dead" })).toEqual({ ...emptyFilters(), ids: [5], status: "dead" });
    expect(deleteFiltersOf({ proxies: [5], filter: false, socks4: true, maxTimeout: 100, reputationLabels: ["good"] })).toEqual({
      ...emptyFilters(),
      ids: [5],
      reputation: ["good"],
    });
    expect(deleteFiltersOf({ proxies: [5], scope: "selected", filter: true, proxyStatus: "dead" })).toEqual({ ...emptyFilters(), ids: [5], status: "dead" });
    expect(deleteFiltersOf({ proxies: [5], scope: "all", proxyStatus: "dead" })).toEqual({ ...emptyFilters(), status: "dead" });
    expect(deleteFiltersOf({ scope: "all" })).toEqual(emptyFilters());
  });

  it.each([[[]], [{}], [{ proxies: [] }], [{ scope: "selected" }], [{ filter: true }], [null], ["1"], [[0]], [{ scope: "every" }]])("refuses %j", (body) => {
    expect(() => deleteFiltersOf(body)).toThrow(ProxyFilterError);
  });
});
