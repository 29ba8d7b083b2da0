/** /16 prefixes of IPv4, and the addresses in each. */
const PREFIXES = 1 << 16;
const PREFIX_SIZE = 1 << 16;

/**
 * Sorted, non-overlapping IPv4 ranges in typed arrays: a lookup is a binary
 * search with no allocation. `values[i]` is an index into the caller's own
 * table, -1 for "no data" (gaps are stored as ranges too, so a lookup never
 * lands on the wrong neighbour).
 *
 * The search starts from the address's /16: `below[p]` is how many ranges
 * start below address `p << 16` (the first of the /16 `p`), so the range
 * holding an address of that /16 is among a handful instead of hundreds of
 * thousands (an upload looks up every new proxy in two tables;
 * docs/benchmarks.md, item 26). 256 KiB a table.
 */
export class RangeTable {
  private readonly below: Uint32Array;

  private constructor(
    private readonly starts: Uint32Array,
    private readonly ends: Uint32Array,
    private readonly values: Int32Array,
  ) {
    const below = new Uint32Array(PREFIXES + 1);
    let index = 0;
    for (let prefix = 0; prefix <= PREFIXES; prefix++) {
      const first = prefix * PREFIX_SIZE;
      while (index < starts.length && (starts[index] ?? 0) < first) index++;
      below[prefix] = index;
    }
    this.below = below;
  }

  get size(): number {
    return this.starts.length;
  }

  /** The value index of the range holding `address`, or -1. */
  lookup(address: number): number {
    const { starts, ends, values, below } = this;
    const prefix = address >>> 16;
    // The last range starting at or before `address` starts inside this /16, or else is the last one before it
    // (where `high` ends when no range of the /16 starts at or before the address).
    let low = below[prefix] ?? 0;
    let high = (below[prefix + 1] ?? starts.length) - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      if ((starts[mid] ?? 0) <= address) low = mid + 1;
      else high = mid - 1;
    }
    if (high < 0 || address > (ends[high] ?? -1)) return -1;
    return values[high] ?? -1;
  }

  /** Collects ranges in ascending order; adjacent ranges with one value merge. */
  static builder(capacity = 1024): RangeTableBuilder {
    return new RangeTableBuilder(capacity);
  }

  /** @internal */
  static fromArrays(starts: Uint32Array, ends: Uint32Array, values: Int32Array): RangeTable {
    return new RangeTable(starts, ends, values);
  }
}

export class RangeTableBuilder {
  private starts: Uint32Array;
  private ends: Uint32Array;
  private values: Int32Array;
  private count = 0;

  constructor(capacity: number) {
    this.starts = new Uint32Array(capacity);
    this.ends = new Uint32Array(capacity);
    this.values = new Int32Array(capacity);
  }

  /** Ranges must arrive sorted by start and must not overlap; out-of-order ones are dropped. */
  add(start: number, end: number, value: number): void {
    const last = this.count - 1;
    if (last >= 0) {
      const lastEnd = this.ends[last] ?? 0;
      if (start <= lastEnd) return;
      if (this.values[last] === value && start === lastEnd + 1) {
        this.ends[last] = end;
        return;
      }
    }
    if (this.count === this.starts.length) this.grow();
    this.starts[this.count] = start;
    this.ends[this.count] = end;
    this.values[this.count] = value;
    this.count++;
  }

  build(): RangeTable {
    return RangeTable.fromArrays(this.starts.slice(0, this.count), this.ends.slice(0, this.count), this.values.slice(0, this.count));
  }

  private grow(): void {
    const size = this.starts.length * 2;
    const starts = new Uint32Array(size);
    const ends = new Uint32Array(size);
    const values = new Int32Array(size);
    starts.set(this.starts);
    ends.set(this.ends);
    values.set(this.values);
    this.starts = starts;
    this.ends = ends;
    this.values = values;
  }
}
