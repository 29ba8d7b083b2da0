// Run by service-node-flags.e2e.test.ts under a given set of V8 flags.
//
// First a burst in which every object one literal makes survives (as rows
// held by a large export, or whatever start-up keeps), then a long stream
// from the same literal in which each object dies young (as a list page's
// objects do). Prints, as JSON, how far the old generation grew during the
// stream: when V8 has pretenured the literal, the stream's objects go
// straight to the old generation and only full collections take them back.
import v8 from "node:v8";

const BURST = 2_000_000;
const STREAM = 20_000_000;
const RING = 4096;

const make = (i) => ({ id: i, name: "row", tags: [i, i + 1] });

let kept = [];
for (let i = 0; i < BURST; i++) kept.push(make(i));
kept = null;

const oldSpaceUsed = () => v8.getHeapSpaceStatistics().find((space) => space.space_name === "old_space")?.space_used_size ?? 0;
const ring = new Array(RING);
const startOld = oldSpaceUsed();
let maxOld = startOld;
for (let i = 0; i < STREAM; i++) {
  ring[i % RING] = make(i);
  if (i % 65_536 === 0) maxOld = Math.max(maxOld, oldSpaceUsed());
}
process.stdout.write(`${JSON.stringify({ oldGrowthMiB: (maxOld - startOld) / 2 ** 20, ringLength: ring.length })}\n`);
