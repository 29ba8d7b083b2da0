import { ExportSlots, exportSlotsFor } from "./export-slots.js";

describe("ExportSlots", () => {
  it("gives a user at most perUser slots and everyone together at most total, and takes each back once", () => {
    const slots = new ExportSlots(3, 2);
    const a1 = slots.take(1);
    const a2 = slots.take(1);
    expect(slots.take(1)).toEqual({ refused: "user" });
    const b1 = slots.take(2);
    expect(slots.take(3)).toEqual({ refused: "total" });
    expect(slots.take(2)).toEqual({ refused: "total" });
    if (!("release" in a1) || !("release" in a2) || !("release" in b1)) throw new Error("expected slots");
    a1.release();
    a1.release(); // a second release gives nothing back
    const c1 = slots.take(3);
    expect("release" in c1).toBe(true);
    expect(slots.take(4)).toEqual({ refused: "total" });
    a2.release();
    b1.release();
    // User 1 has none left in use: both of its slots are free again.
    expect("release" in slots.take(1)).toBe(true);
    expect("release" in slots.take(1)).toBe(true);
  });

  it("leaves two connections of the pool to other requests, and at least one slot", () => {
    expect(exportSlotsFor(10).total).toBe(8);
    expect(exportSlotsFor(3).total).toBe(1);
    expect(exportSlotsFor(1).total).toBe(1);
    expect(exportSlotsFor(10).perUser).toBe(2);
  });
});
