// What the page keeps of a long run, for bench_page_heap.py: the fold (fold.js) and the
// timeline's cache (gantt_cache.js) fed a run's wire payloads, a timeline draw every 600
// events as the page would make, then, with the payloads dropped: the heap they keep, the
// objects a round, and V8's full collection with that heap (the longest task of a long run
// on the page). Run with --expose-gc: node --expose-gc page_heap.mjs SRC_DIR PAYLOADS.json
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { objectsIn } from "../tests/js/objects.mjs";

const [srcDir, payloads] = process.argv.slice(2);
const src = (name) => pathToFileURL(`${srcDir}/${name}`).href;
const { fold } = await import(src("fold.js"));
const { createStore } = await import(src("store.js"));
const { createCache, runItems } = await import(src("gantt_cache.js"));

const used = () => {
  globalThis.gc();
  globalThis.gc();
  return process.memoryUsage().heapUsed;
};

const text = readFileSync(payloads, "utf8");
const before = used();
const store = createStore();
const cache = createCache();
{
  const events = JSON.parse(text);
  let i = 0;
  for (const e of events) {
    fold(store.run, e);
    if (++i % 600 === 0) runItems(cache, store);
  }
  runItems(cache, store);
}
const kept = used() - before;
const rounds = store.run.rounds.length;
const pauses = [];
for (let i = 0; i < 9; i++) {
  const t0 = performance.now();
  globalThis.gc();
  pauses.push(performance.now() - t0);
}
pauses.sort((a, b) => a - b);
console.log(
  JSON.stringify({
    rounds,
    kept_mb: kept / 1e6,
    bytes_per_round: kept / rounds,
    objects_per_round: objectsIn([store.run.rounds, cache]) / rounds,
    conversation_objects_per_round: objectsIn(store.run.conversation) / rounds,
    full_gc_ms: pauses[4],
  }),
);
globalThis.keep = [store, cache];
