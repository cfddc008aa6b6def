// @ts-check
// What the whole-run timeline shows, in seconds on the run's clock (no pixels, no DOM):
// the bars of a round (its model calls, tools, pruning calls and pauses, one lane per
// kind), the nested runs under the shown run (store.runs, rows Python sends) as lanes of
// their own, and where the time went in words. gantt_cache.js keeps them for a whole run.

import { duration, plural } from "./format.js";
import { lastToolName, toolWords } from "./rounds.js";
import { NONE, add } from "./lean.js";
import { held } from "./store.js";

/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./run.js").Round} Round */
/** @typedef {"model" | "tool" | "pruning" | "pause"} Kind */

/**
 * @typedef {object} Item one bar
 * @property {number} t0 seconds from the shown run's start
 * @property {number | null} t1 null: still going (it ends now)
 * @property {Kind} kind
 * @property {boolean} failed
 * @property {boolean} stopped cut short by a stop
 * @property {number} round the round it belongs to (its number; -1 for a nested run's)
 * @property {string} label what it was
 * @property {string} said how it ended, in words
 */

/**
 * @typedef {object} Nested a nested run's lane
 * @property {string} id its run id
 * @property {string} label its name, else the tool that started it
 * @property {number} depth 1 for a run the shown run started, 2 for one that run started…
 * @property {number} offset seconds from the shown run's start to its own
 * @property {number} end seconds from the shown run's start to its end (now, while it runs)
 * @property {boolean} running
 * @property {string} status
 * @property {string | null} toolCallId the call of its parent that started it
 * @property {Item[]} items
 * @property {number} left spans Python left out
 */

/** The lanes of the shown run, in order, and what each is called. */
export const LANES = /** @type {const} */ ([
  ["model", "model"],
  ["tool", "tools"],
  ["pruning", "pruning"],
  ["pause", "paused"],
]);

/** What a nested run's span of each kind is called. */
const SPAN_WORD = { model: "model call", tool: "tool", pruning: "pruning call", pause: "paused" };

/** Nested runs drawn as lanes at most (the rest are counted). */
export const MAX_NESTED = 8;

/**
 * A pause's bar: where it held the loop.
 * @param {{stage: string, purpose: string}} p
 * @returns {string}
 */
export function pauseLabel(p) {
  if (p.stage === "tool_dispatch") return "paused before the tools";
  return p.purpose === "pruning" ? "paused before pruning" : "paused before the model call";
}

/**
 * The bars of one round, by lane (a lane with none holds lean.js's shared empty list:
 * gantt_cache.js keeps every round's, and most rounds have no pruning and no pause).
 * @param {Store} s
 * @param {Round} r
 * @returns {Record<Kind, Item[]>}
 */
export function roundItems(s, r) {
  /** @type {Record<Kind, Item[]>} */
  const out = { model: NONE, tool: NONE, pruning: NONE, pause: NONE };
  /** @type {(kind: Kind, t0: number, t1: number | null, label: string, said: string, failed?: boolean, stopped?: boolean) => void} */
  const bar = (kind, t0, t1, label, said, failed = false, stopped = false) => {
    out[kind] = add(out[kind], { t0, t1, kind, failed, stopped, round: r.n, label, said });
  };
  const c = r.call;
  const callWord = r.purpose === "synthesis" ? "final-answer call" : "model call";
  const last = c && c.error && c.interrupted === "failed" ? 1 : 0;
  for (const f of r.failedCalls.slice(0, r.failedCalls.length - last)) {
    if (typeof f.t === "number") bar("model", Math.max(0, f.t - (f.latency || 0)), f.t, callWord, `failed: ${f.type}`, true);
  }
  if (c && c.t0 !== null && !held(s, c)) {
    const end = c.t1 !== null ? c.t1 : c.interrupted ? s.run.lastT : null;
    const said = c.interrupted === "failed" ? `failed${c.error ? `: ${c.error.type}` : ""}` : c.interrupted ? "stopped" : c.done ? "ok" : "waiting for the reply";
    bar("model", c.t0, end, callWord, said, c.interrupted === "failed", c.interrupted === "cancelled");
  }
  for (const t of r.tools) {
    if (!t.ran || t.tStart === null || t.status === "not_run") continue;
    const end = t.tEnd !== null ? t.tEnd : t.status === "running" ? null : t.tStart;
    bar("tool", t.tStart, end, t.name, toolWords(t), t.status === "error", t.status === "cancelled");
  }
  for (const p of r.prunings) {
    if (p.t0 === null || p.t0 === undefined) continue;
    const end = p.t1 !== null && p.t1 !== undefined ? p.t1 : p.interrupted ? s.run.lastT : null;
    const failed = p.interrupted === "failed";
    bar("pruning", p.t0, end, `pruning ${lastToolName(r, p.toolCallId)}`, failed ? "failed" : p.done ? "ok" : p.interrupted ? "stopped" : "running", failed, p.interrupted === "cancelled");
  }
  for (const c of r.summaries) {
    if (c.t0 === null) continue;
    const end = c.t1 !== null ? c.t1 : c.interrupted ? s.run.lastT : null;
    const failed = c.interrupted === "failed";
    bar("model", c.t0, end, "summarizing the conversation", failed ? "failed" : c.done ? "ok" : c.interrupted ? "stopped" : "running", failed, c.interrupted === "cancelled");
  }
  for (const p of r.pauses) bar("pause", p.t0, p.t1, pauseLabel(p), "held by a pause");
  return out;
}

/**
 * The rows of store.runs (run_rows.js'; an empty map until there are any).
 * @param {Store} s
 * @returns {Map<string, any>}
 */
export function runRows(s) {
  const runs = /** @type {any} */ (s).runs;
  return runs instanceof Map ? runs : new Map();
}

/**
 * The runs nested under the shown run (its sub-agents, theirs…), depth first, each
 * parent's children in start order; the first `max` as lanes, the rest counted.
 * @param {Store} s
 * @param {number} now the shown run's clock
 * @param {number} [max]
 * @returns {{lanes: Nested[], more: number}}
 */
export function nestedRuns(s, now, max = MAX_NESTED) {
  const rows = runRows(s);
  const top = s.run.runId;
  if (!top || !rows.size) return { lanes: [], more: 0 };
  /** @type {Map<string, any[]>} */
  const children = new Map();
  for (const row of rows.values()) {
    if (!row || typeof row.run_id !== "string" || !row.parent_run_id || row.run_id === top) continue;
    const list = children.get(row.parent_run_id) || [];
    list.push(row);
    children.set(row.parent_run_id, list);
  }
  const own = rows.get(top);
  const base = own && typeof own.offset_s === "number" ? own.offset_s : 0;
  /** @type {Nested[]} */
  const lanes = [];
  let count = 0;
  const seen = new Set([top]);
  /** @param {string} parent @param {number} depth */
  const walk = (parent, depth) => {
    const kids = (children.get(parent) || []).slice().sort((a, b) => (a.offset_s || 0) - (b.offset_s || 0));
    for (const row of kids) {
      if (seen.has(row.run_id)) continue; // a loop in the parent links: drawn once
      seen.add(row.run_id);
      count++;
      if (lanes.length < max) lanes.push(nestedLane(row, depth, (row.offset_s || 0) - base, now));
      walk(row.run_id, depth + 1);
    }
  };
  walk(top, 1);
  return { lanes, more: count - lanes.length };
}

/**
 * One nested run's lane: its spans moved onto the shown run's clock.
 * @param {any} row a RunRow
 * @param {number} depth
 * @param {number} offset
 * @param {number} now
 * @returns {Nested}
 */
function nestedLane(row, depth, offset, now) {
  const running = row.outcome === null || row.outcome === undefined;
  const label = row.name || row.parent_tool_name || "nested run";
  /** @type {Item[]} */
  const items = [];
  for (const span of Array.isArray(row.spans) ? row.spans : []) {
    if (!Array.isArray(span) || typeof span[1] !== "number") continue;
    const kind = /** @type {Kind} */ (Object.hasOwn(SPAN_WORD, span[0]) ? span[0] : "tool");
    const t1 = typeof span[2] === "number" ? offset + span[2] : null;
    items.push({ t0: offset + span[1], t1, kind, failed: !!span[3], stopped: false, round: -1, label: SPAN_WORD[kind], said: span[3] ? "failed" : t1 === null ? "running" : "ok" });
  }
  const dur = typeof row.duration_s === "number" ? row.duration_s : 0;
  return {
    id: row.run_id,
    label: String(label),
    depth,
    offset,
    end: running ? Math.max(offset + dur, now) : offset + dur,
    running,
    status: String(row.status || ""),
    toolCallId: row.parent_tool_call_id || null,
    items,
    left: row.spans_left_out || 0,
  };
}

/**
 * "13.5 s across 4 rounds: model 9.1 s, tools 4.2 s, paused 0.2 s" (what else took the
 * time, when it is worth a word).
 * @param {Store} s
 * @param {{total: number, model: number, tools: number, pruning: number, paused: number}} split
 * @returns {string}
 */
export function splitText(s, split) {
  const n = s.run.rounds.length + s.omitted; // a saved run: the rounds its file left out count
  const parts = [`model ${duration(split.model)}`, `tools ${duration(split.tools)}`];
  if (split.pruning > 0) parts.push(`pruning ${duration(split.pruning)}`);
  if (split.paused > 0) parts.push(`paused ${duration(split.paused)}`);
  let rest = split.total - split.model - split.tools - split.pruning - split.paused;
  const first = s.run.rounds[0];
  if (s.omitted && first && first.t0 !== null && first.t0 > 0) {
    // their bars are not in the file: their time is theirs, never "other"
    parts.unshift(`${plural(s.omitted, "earlier round")} not in this file ${duration(first.t0)}`);
    rest -= first.t0;
  }
  if (rest > 0.05 * split.total && rest >= 0.01) parts.push(`other ${duration(rest)}`);
  return `${duration(split.total)} across ${n.toLocaleString("en-US")} ${n === 1 ? "round" : "rounds"}: ${parts.join(", ")}`;
}

/**
 * The place in `rounds` of the round running at time `t` (the last to start by then).
 * @param {Round[]} rounds
 * @param {number} t
 * @returns {number} -1 before the first
 */
export function roundIndexAt(rounds, t) {
  let lo = 0;
  let hi = rounds.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const t0 = rounds[mid].t0;
    if (t0 !== null && t0 <= t) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}
