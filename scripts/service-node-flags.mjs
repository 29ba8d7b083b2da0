// Node.js flags every Roost service process runs with: `npm start` passes
// them to the service it starts, `npm run bench` to the gateway process it
// measures. Run a service by hand with them too (README, "Running the
// services apart").
//
// A young generation of 64 MiB per semi-space (V8's default grows from 1 to
// at most 16). A list page allocates ~130 KiB of short-lived objects: at
// 16 MiB the gateway ran a scavenge every ~110 requests, and each one stops
// every request in flight (1-15 ms on two busy cores); at 64 MiB a quarter
// as many, for ~4x less GC time in all, and an upload's parser collects less
// too. The minimum is set as well because V8 grows the space only as
// objects survive, which short-lived request garbage rarely does: with the
// maximum alone one benchmark run stayed near the default size throughout.
// Costs up to ~100 MiB more resident memory than the default
// (docs/benchmarks.md, item 15).
//
// A fixed old-generation growing factor of 4 (--heap-growing-percent=300).
// After each full collection V8 sets the old generation's next limit to
// live size x a factor + the young generation's capacity, the factor
// chosen from how fast the old generation has been growing: when it grows
// slowly (as under list pages) or the process was idle, the factor is the
// minimum, 1.1. V8 also starts marking early, "soft", once the room left
// below the limit falls under a threshold tied to the young generation's
// size (traced: it started with 64-87 MiB left, never with 136 or more).
// With 64 MiB semi-spaces and ~70 MiB live, 1.1 leaves ~71 MiB of room,
// under that threshold before anything is allocated: one
// full collection at the wrong moment (after a large export, an idle spell,
// sometimes start-up) and the gateway ran the next one as soon as it could,
// every 0.2-3 s for the rest of its life, with ~30% more CPU per request
// and pauses up to ~45 ms. With 4, V8's own choice in every healthy run,
// the room is 3 x live + 64 MiB (docs/benchmarks.md, item 21).
//
// No allocation-site pretenuring. V8 watches which object literals survive a
// scavenge and, when 85% from one site do while the young generation is at
// its maximum size (always, with the flags above), allocates that site's
// objects straight into the old generation for good. After a burst where
// request objects lived a little longer (a large export, start-up), every
// later list page put short-lived objects there: ~5.6 MiB more old
// generation per scavenge, and scavenges of 6-15 ms instead of 2-4.
// Without it those objects die young; uploads and exports run as fast.
export const SERVICE_NODE_FLAGS = ["--min-semi-space-size=64", "--max-semi-space-size=64", "--heap-growing-percent=300", "--no-allocation-site-pretenuring"];
