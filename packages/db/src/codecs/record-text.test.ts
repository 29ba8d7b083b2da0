import { RecordTextError, splitRecordText } from "./record-text.js";

describe("splitRecordText (PostgreSQL's row text)", () => {
  it("splits plain fields and reads nothing at all as NULL", () => {
    expect(splitRecordText("(1,23.0.0.1,8080,t,2026-11-22T06:36:35.733Z,76.1)")).toEqual(["1", "23.0.0.1", "8080", "t", "2026-11-22T06:36:35.733Z", "76.1"]);
    expect(splitRecordText("(,a,,)")).toEqual([null, "a", null, null]);
    expect(splitRecordText("(x)")).toEqual(["x"]);
  });

  it("reads quoted fields: empty strings, doubled quotes and backslashes, separators and spaces", () => {
    expect(splitRecordText('("",a)')).toEqual(["", "a"]);
    expect(splitRecordText('("a,b","(c)"," d ","e""f","g\\\\h","\\"")')).toEqual(["a,b", "(c)", " d ", 'e"f', "g\\h", '"']);
    expect(splitRecordText('("""")')).toEqual(['"']);
    expect(splitRecordText('(1,"ж, ü")')).toEqual(["1", "ж, ü"]);
  });

  it("appends to the array it is given", () => {
    const row: (string | null)[] = [];
    expect(splitRecordText("(a,b)", row)).toBe(row);
    row.push("total");
    expect(row).toEqual(["a", "b", "total"]);
  });

  it("refuses what is not a record", () => {
    expect(() => splitRecordText("a,b")).toThrow(RecordTextError);
    expect(() => splitRecordText('("a)')).toThrow(/unterminated/);
    expect(() => splitRecordText('("a"b)')).toThrow(/malformed/);
  });
});
