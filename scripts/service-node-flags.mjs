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
// No allocation-site pretenuring. V8 watches which object literals survive a
// scavenge and, when nearly all from one site do, allocates that site's
// objects straight into the old generation from then on (objects made
// there carry no survival feedback, so in practice it stays). A burst where request objects live a little longer (a large
// export, start-up while the geo databases load) made it pretenure objects
// every later list page allocates and drops at once: the gateway then ran a
// full mark-compact every 0.2-3 s for the rest of its life, with ~30% more
// CPU per request and pauses up to ~45 ms. Without it those objects die
// young as they should; uploads and exports run as fast
// (docs/benchmarks.md, item 21).
export const SERVICE_NODE_FLAGS = ["--min-semi-space-size=64", "--max-semi-space-size=64", "--no-allocation-site-pretenuring"];
