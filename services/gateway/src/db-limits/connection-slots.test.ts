import { ConnectionSlots, connectionSlotsFor, SlotsBusyError, type Slot, type SlotsState } from "./connection-slots.js";

const limits = { total: 3, perUser: { upload: 1, export: 2 }, waiting: { perUser: 2, total: 3 } };
/** Longer than any test here: a wait that must not run out. */
const LONG = 60_000;

/** What a promise has come to once pending callbacks ran: its value, its error, or "pending" (still in line). */
async function settled<T>(promise: Promise<T>): Promise<{ value: T } | { error: unknown } | "pending"> {
  let outcome: { value: T } | { error: unknown } | "pending" = "pending";
  promise.then(
    (value) => (outcome = { value }),
    (error: unknown) => (outcome = { error }),
  );
  await new Promise<void>((resolve) => setImmediate(resolve));
  return outcome;
}

function slotOf(outcome: Awaited<ReturnType<typeof settled<Slot>>>): Slot {
  if (outcome === "pending" || !("value" in outcome)) throw new Error(`expected a slot, got ${JSON.stringify(outcome)}`);
  return outcome.value;
}

describe("ConnectionSlots: exports", () => {
  it("gives a user at most two exports and everyone together at most total, and takes each back once", () => {
    const slots = new ConnectionSlots(limits);
    const a1 = slots.take(1, "export");
    const a2 = slots.take(1, "export");
    expect(() => slots.take(1, "export")).toThrow(new SlotsBusyError("user"));
    const b1 = slots.take(2, "export");
    expect(() => slots.take(3, "export")).toThrow(new SlotsBusyError("total"));
    a1.release();
    a1.release(); // a second release gives nothing back
    const c1 = slots.take(3, "export");
    expect(() => slots.take(4, "export")).toThrow(SlotsBusyError);
    a2.release();
    b1.release();
    c1.release();
    expect(slots.state).toEqual({ held: { upload: 0, export: 0, extra: 0 }, waiting: 0 });
  });
});

describe("ConnectionSlots: uploads", () => {
  it("lets one upload per user hold a slot and the next of that user wait its turn, while other users go ahead", async () => {
    const slots = new ConnectionSlots(limits);
    const never = new AbortController().signal;
    const first = slotOf(await settled(slots.wait(1, never, LONG)));
    const second = slots.wait(1, never, LONG);
    expect(await settled(second)).toBe("pending");
    // Another user's upload is not held up by user 1's line.
    const other = slotOf(await settled(slots.wait(2, never, LONG)));
    expect(slots.state).toEqual({ held: { upload: 2, export: 0, extra: 0 }, waiting: 1 });
    first.release();
    const next = slotOf(await settled(second));
    expect(slots.state).toEqual({ held: { upload: 2, export: 0, extra: 0 }, waiting: 0 });
    next.release();
    other.release();
  });

  it("serves the line first come first served when the total is full, before any newcomer export", async () => {
    const slots = new ConnectionSlots(limits);
    const never = new AbortController().signal;
    const exports = [slots.take(1, "export"), slots.take(1, "export"), slots.take(2, "export")];
    const order: number[] = [];
    const waits = [3, 4].map((user) => slots.wait(user, never, LONG).then((slot) => (order.push(user), slot)));
    expect(await settled(waits[0] as Promise<Slot>)).toBe("pending");
    exports[0]?.release();
    // The slot went to the first in line, so a newcomer export finds none.
    expect(() => slots.take(5, "export")).toThrow(new SlotsBusyError("total"));
    exports[1]?.release();
    await Promise.all(waits);
    expect(order).toEqual([3, 4]);
  });

  it("refuses past the line's length, per user and in all", async () => {
    const slots = new ConnectionSlots(limits);
    const never = new AbortController().signal;
    slotOf(await settled(slots.wait(1, never, LONG)));
    void slots.wait(1, never, LONG);
    void slots.wait(1, never, LONG);
    await expect(slots.wait(1, never, LONG)).rejects.toEqual(new SlotsBusyError("user"));
    slotOf(await settled(slots.wait(2, never, LONG)));
    void slots.wait(2, never, LONG);
    await expect(slots.wait(3, never, LONG)).resolves.toBeDefined(); // the third slot: free, so no line
    await expect(slots.wait(4, never, LONG)).rejects.toEqual(new SlotsBusyError("total"));
  });

  it("takes an upload whose request went away out of the line, and never gives it a slot", async () => {
    const slots = new ConnectionSlots(limits);
    const never = new AbortController().signal;
    const first = slotOf(await settled(slots.wait(1, never, LONG)));
    const gone = new AbortController();
    const leaving = slots.wait(1, gone.signal, LONG);
    const staying = slots.wait(1, never, LONG);
    gone.abort(new Error("client went away"));
    await expect(leaving).rejects.toThrow("client went away");
    expect(slots.state.waiting).toBe(1);
    first.release();
    slotOf(await settled(staying));
    expect(slots.state).toEqual({ held: { upload: 1, export: 0, extra: 0 }, waiting: 0 });
    // Already gone before it asked: refused at once.
    await expect(slots.wait(2, gone.signal, LONG)).rejects.toThrow("client went away");
  });

  it("takes an upload out of the line after its longest wait, and gives the next slot to the one behind it", async () => {
    const slots = new ConnectionSlots(limits);
    const never = new AbortController().signal;
    const first = slotOf(await settled(slots.wait(1, never, LONG)));
    const impatient = slots.wait(1, never, 20);
    const patient = slots.wait(1, never, LONG);
    await expect(impatient).rejects.toEqual(new SlotsBusyError("waited"));
    expect(slots.state.waiting).toBe(1);
    first.release();
    slotOf(await settled(patient));
    expect(slots.state).toEqual({ held: { upload: 1, export: 0, extra: 0 }, waiting: 0 });
  });

  it("gives an extra slot only while one is free, and counts it in the total", () => {
    const slots = new ConnectionSlots(limits);
    const extra = slots.takeExtra();
    expect(extra).not.toBeNull();
    slots.take(1, "export");
    slots.take(2, "export");
    expect(slots.takeExtra()).toBeNull();
    expect(() => slots.take(3, "export")).toThrow(new SlotsBusyError("total"));
    extra?.release();
    expect(slots.takeExtra()).not.toBeNull();
  });

  it("reports every change to its observer", async () => {
    const seen: SlotsState[] = [];
    const slots = new ConnectionSlots(limits, (state) => seen.push(state));
    const never = new AbortController().signal;
    const upload = slotOf(await settled(slots.wait(1, never, LONG)));
    const waiting = slots.wait(1, never, LONG);
    upload.release();
    (await waiting).release();
    // Consecutive repeats dropped: a slot given back and handed to the line at once may report twice.
    const states = seen.map((state) => `${state.held.upload}/${state.waiting}`).filter((state, i, all) => state !== all[i - 1]);
    expect(states).toEqual([
      "0/0", // at construction
      "1/0",
      "1/1",
      "1/0", // the first gave its slot back, and the second has it
      "0/0",
    ]);
  });
});

describe("connectionSlotsFor", () => {
  it("leaves two connections of the pool to other requests, and at least one slot", () => {
    expect(connectionSlotsFor(10).limits).toEqual({ total: 8, perUser: { upload: 1, export: 2 }, waiting: { perUser: 4, total: 64 } });
    expect(connectionSlotsFor(3).limits.total).toBe(1);
    expect(connectionSlotsFor(1).limits.total).toBe(1);
  });
});
