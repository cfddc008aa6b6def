// @ts-check
// The whole-run timeline's memory of a run: every round's bars and figures, built once
// and kept while the round stays the same. A redraw checks each round's change counter,
// keeps the lanes up to the first round that changed and rebuilds from there (while a
// run goes on: its newest round), and sums the kept rounds' figures once; so a live
// 10,000-round run costs a redraw only what its new rounds cost.

import { pauseLabel, roundItems } from "./gantt_data.js";
import { roundTime } from "./rounds.js";
import { holdingNow, pausedNow, runNow } from "./store.js";

/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./run.js").Round} Round */
/** @typedef {import("./gantt_data.js").Item} Item */
/** @typedef {import("./gantt_data.js").Kind} Kind */

const KINDS = /** @type {Kind[]} */ (["model", "tool", "pruning", "pause"]);

/**
 * @typedef {object} Figures one round's time: its model calls, its tools and pruning calls
 * (side by side counted once), and its own time (pauses left out)
 * @property {number} model
 * @property {number} tools
 * @property {number} pruning
 * @property {number} own
 */

/**
 * @typedef {object} Kept one round as built: numbers only besides its bars, so a long run
 * keeps one small object a round here (the page's garbage collector walks every one)
 * @property {number} v its change counter then
 * @property {Record<Kind, Item[]>} items
 * @property {boolean} live it had a bar still growing (its figures move with the clock)
 * @property {number} own its own time (of its finished bars, when live)
 * @property {number} atModel where its bars start in the model lane
 * @property {number} atTool ... in the tool lane
 * @property {number} atPruning ... in the pruning lane
 * @property {number} atPause ... in the pause lane
 * @property {number} sumModel the model time of every round up to and including it
 * @property {number} sumTools ... their tools' time
 * @property {number} sumPruning ... their pruning calls' time
 * @property {number} slowest the place of the slowest round up to it (-1: none yet)
 * @property {number} failed its failed calls (model, tool and pruning calls)
 */

/**
 * Where round `k`'s bars start in lane `kind`.
 * @param {Kept} k
 * @param {Kind} kind
 * @returns {number}
 */
function startOf(k, kind) {
  return kind === "model" ? k.atModel : kind === "tool" ? k.atTool : kind === "pruning" ? k.atPruning : k.atPause;
}

/**
 * The figures of every round up to and including `k` (`own` is not summed).
 * @param {Kept | undefined} k
 * @returns {Figures}
 */
function sumOf(k) {
  return k ? { model: k.sumModel, tools: k.sumTools, pruning: k.sumPruning, own: 0 } : ZERO;
}

/**
 * @typedef {object} Cache
 * @property {string | null} runId
 * @property {Kept[]} rounds
 * @property {number[]} live the places of the rounds with bars still growing
 * @property {number[]} failing the places of the rounds with a failed call
 * @property {number} failed failed calls in all
 * @property {Record<Kind, Item[]>} lanes every bar of the run, by lane
 */

/** @returns {Cache} */
export function createCache() {
  return { runId: null, rounds: [], live: [], failing: [], failed: 0, lanes: { model: [], tool: [], pruning: [], pause: [] } };
}

/**
 * Seconds `items` cover, overlaps counted once (tools that ran side by side).
 * @param {Item[]} items
 * @param {number} now where an open one ends
 * @returns {number}
 */
export function covered(items, now) {
  if (items.length === 1) return (items[0].t1 === null ? now : items[0].t1) - items[0].t0;
  const spans = items.map((it) => [it.t0, it.t1 === null ? now : it.t1]).sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [a, b] of spans) {
    if (b <= end) continue;
    total += b - Math.max(a, end);
    end = b;
  }
  return total;
}

/**
 * @param {Store} s
 * @param {Round} r
 * @param {Record<Kind, Item[]>} items
 * @param {number} now
 * @returns {Figures}
 */
function figures(s, r, items, now) {
  let model = 0;
  for (const it of items.model) model += (it.t1 === null ? now : it.t1) - it.t0;
  return { model, tools: covered(items.tool, now), pruning: covered(items.pruning, now), own: roundTime(s, r) || 0 };
}

/** @type {(a: Figures, b: Figures) => Figures} */
const plus = (a, b) => ({ model: a.model + b.model, tools: a.tools + b.tools, pruning: a.pruning + b.pruning, own: 0 });
const ZERO = { model: 0, tools: 0, pruning: 0, own: 0 };

/**
 * Every bar of the shown run, by lane (the same arrays, grown or cut, from one call to the
 * next). A pause holding the loop now is a last bar that grows.
 * @param {Cache} cache
 * @param {Store} s
 * @returns {Record<Kind, Item[]>}
 */
export function runItems(cache, s) {
  const rounds = s.run.rounds;
  if (cache.runId !== s.run.runId || rounds.length < cache.rounds.length) Object.assign(cache, createCache(), { runId: s.run.runId });
  const kept = cache.rounds;
  let from = Math.max(0, rounds.length - 1); // the newest is always rebuilt: a pause or a release changes it without an event
  for (let i = 0; i < from; i++) {
    if (!kept[i] || kept[i].v !== rounds[i].v) {
      from = i;
      break;
    }
  }
  const lanes = cache.lanes;
  const end = kept[kept.length - 1];
  for (const kind of KINDS) lanes[kind].length = kept[from] ? startOf(kept[from], kind) : end ? startOf(end, kind) + end.items[kind].length : 0;
  const old = kept.splice(from);
  cache.live = cache.live.filter((i) => i < from);
  cache.failing = cache.failing.filter((i) => i < from);
  for (const k of old) cache.failed -= k.failed;
  const now = runNow(s);
  for (let i = from; i < rounds.length; i++) {
    const r = rounds[i];
    const was = old[i - from];
    // a round after the first that changed keeps its bars when it did not change itself
    const items = was && was.v === r.v && i < rounds.length - 1 ? was.items : roundItems(s, r);
    const atModel = lanes.model.length;
    const atTool = lanes.tool.length;
    const atPruning = lanes.pruning.length;
    const atPause = lanes.pause.length;
    for (const kind of KINDS) for (const it of items[kind]) lanes[kind].push(it);
    const live = KINDS.some((kind) => items[kind].some((it) => it.t1 === null)) || i === rounds.length - 1;
    if (live) cache.live.push(i);
    const fig = figures(s, r, items, now);
    const before = kept[i - 1];
    const sum = live ? sumOf(before) : plus(sumOf(before), fig);
    const prev = before ? before.slowest : -1;
    const slowest = live || r.t0 === null ? prev : prev < 0 || fig.own > kept[prev].own ? i : prev;
    let failed = 0;
    for (const kind of KINDS) for (const it of items[kind]) if (it.failed) failed++;
    if (failed) cache.failing.push(i);
    cache.failed += failed;
    kept.push({ v: r.v, items, live, own: fig.own, atModel, atTool, atPruning, atPause, sumModel: sum.model, sumTools: sum.tools, sumPruning: sum.pruning, slowest, failed });
  }
  const hold = s.control.paused_at;
  if (pausedNow(s) && hold && typeof s.control.paused_since === "number") {
    lanes.pause.push({ t0: s.control.paused_since, t1: null, kind: "pause", failed: false, stopped: false, round: hold.round, label: pauseLabel(hold), said: "paused now" });
  }
  return lanes;
}

/**
 * Whether the cache describes the run the store shows now: what the last runItems built,
 * of the same run, with no round it holds gone. A run switch (or a replay) starts the fold
 * over between two draws; until the next runItems the cache holds the places of the run
 * shown before, which the readers below must not be asked about (a resize, a theme switch or
 * a tick comes in between: they ask for a draw instead).
 * @param {Cache} cache
 * @param {Store} s
 * @returns {boolean}
 */
export function current(cache, s) {
  return cache.runId === s.run.runId && cache.rounds.length <= s.run.rounds.length;
}

/**
 * Where the run's time went (as of the last runItems; only while `current`): its whole time on its clock, and
 * the time of its model calls, tools, pruning and pauses. Rounds with bars still growing
 * are measured now; the others were summed when they were built.
 * @param {Cache} cache
 * @param {Store} s
 * @returns {{total: number, model: number, tools: number, pruning: number, paused: number}}
 */
export function timeSplit(cache, s) {
  const now = runNow(s);
  const kept = cache.rounds;
  const last = kept[kept.length - 1];
  let sum = sumOf(last);
  for (const i of cache.live) sum = plus(sum, figures(s, s.run.rounds[i], kept[i].items, now));
  return { total: now, model: sum.model, tools: sum.tools, pruning: sum.pruning, paused: s.run.paused + holdingNow(s) };
}

/**
 * The round that took longest (its own time, pauses left out), or null before any did
 * (as of the last runItems; only while `current`).
 * @param {Cache} cache
 * @param {Store} s
 * @returns {{round: Round, time: number, t0: number, t1: number} | null}
 */
export function slowestRound(cache, s) {
  const kept = cache.rounds;
  const rounds = s.run.rounds;
  let best = -1;
  let time = -1;
  const last = kept[kept.length - 1];
  if (last && last.slowest >= 0) {
    best = last.slowest;
    time = kept[best].own;
  }
  for (const i of cache.live) {
    const own = roundTime(s, rounds[i]);
    if (own !== null && rounds[i].t0 !== null && own > time) {
      best = i;
      time = own;
    }
  }
  const r = rounds[best];
  if (!r || r.t0 === null) return null;
  return { round: r, time, t0: r.t0, t1: r.t0 + time + r.paused };
}
