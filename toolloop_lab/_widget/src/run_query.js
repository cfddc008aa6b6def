// @ts-check
// What the run list shows of thousands of runs: the counts per outcome in its header, and
// the rows a person asked for (an outcome, only runs whose tools failed, a name, tag or
// question typed), in the order asked for (started, cost, tokens, rounds, duration). With
// no filter and the start order, nested runs sit under their caller (run_rows.orderRuns);
// otherwise the list is flat. No DOM: run_list.js draws it.

import { capitalized } from "./format.js";
import { orderRuns } from "./run_rows.js";
import { STATUS, outcomeWords, word } from "./words.js";

/** @typedef {import("./run_rows.js").RunRow} RunRow */
/** @typedef {import("./run_rows.js").Entry} Entry */

/**
 * @typedef {object} RunQuery what a person asked the run list for
 * @property {string | null} outcome an outcome code (or "running"), null: every outcome
 * @property {boolean} toolErrors only runs with a tool call that failed
 * @property {string} text a name, tag, question or id to look for (case does not matter)
 * @property {string} sort "start", "cost", "tokens", "rounds" or "duration"
 * @property {boolean} desc the largest (the newest) first
 */

/** @type {readonly string[]} */
export const SORTS = ["start", "cost", "tokens", "rounds", "duration"];

/** @type {Readonly<Record<string, string>>} the sort menu's words */
export const SORT_WORDS = { start: "started", cost: "cost", tokens: "tokens", rounds: "rounds", duration: "duration" };

/** @returns {RunQuery} newest first, everything shown */
export function defaultQuery() {
  return { outcome: null, toolErrors: false, text: "", sort: "start", desc: true };
}

/**
 * Whether `q` shows every run in the list's own order (nested runs under their caller).
 * @param {RunQuery} q
 * @returns {boolean}
 */
export function isDefault(q) {
  return q.outcome === null && !q.toolErrors && !q.text.trim() && q.sort === "start" && q.desc;
}

/**
 * A run's outcome as the counts group it: how it ended, else "running" (paused runs too) or "idle".
 * @param {RunRow} row
 * @returns {string}
 */
export function outcomeKey(row) {
  if (row.outcome) return row.outcome;
  return row.status === "paused" ? "running" : row.status === "finished" || row.status === "failed" || row.status === "cancelled" ? row.status : row.status === "idle" ? "idle" : "running";
}

/**
 * An outcome key in words (the run list's own words for a row's outcome).
 * @param {string} key
 * @returns {string}
 */
export function outcomeKeyWords(key) {
  return key === "running" || key === "idle" ? capitalized(word(STATUS, key)) : outcomeWords(key, null);
}

/**
 * @typedef {object} Counts
 * @property {[string, number][]} outcomes each outcome present, most frequent first
 * @property {number} toolErrors runs with at least one failed tool call
 */

/**
 * How many runs ended each way, and how many had a tool call fail.
 * @param {Iterable<RunRow>} rows
 * @returns {Counts}
 */
export function countRuns(rows) {
  /** @type {Map<string, number>} */
  const by = new Map();
  let toolErrors = 0;
  for (const row of rows) {
    const key = outcomeKey(row);
    by.set(key, (by.get(key) || 0) + 1);
    if (row.tool_errors > 0) toolErrors++;
  }
  const outcomes = [...by.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return { outcomes, toolErrors };
}

/**
 * @param {RunRow} row
 * @param {string} needle lower case
 * @returns {boolean}
 */
function matchesText(row, needle) {
  if (!needle) return true;
  /** @param {string | null | undefined} v */
  const has = (v) => typeof v === "string" && v.toLowerCase().includes(needle);
  return has(row.name) || has(row.question) || has(row.run_id) || has(row.parent_tool_name) || row.tags.some(has);
}

/**
 * A number to sort a row by (-Infinity: unknown, last whichever way).
 * @param {RunRow} row
 * @param {string} sort
 * @returns {number}
 */
function sortValue(row, sort) {
  if (sort === "cost") {
    const v = row.cost_usd === null ? NaN : Number(row.cost_usd);
    return Number.isFinite(v) ? v : -Infinity;
  }
  if (sort === "tokens") return row.input_tokens + row.output_tokens;
  if (sort === "rounds") return row.rounds;
  if (sort === "duration") return row.duration_s;
  return 0;
}

/**
 * The lines the list shows for `q`, and whether they are flat (no nesting drawn).
 * @param {Map<string, RunRow>} runs in start order
 * @param {number} leftOut runs seen before the first held
 * @param {RunQuery} q
 * @param {Entry[]} [tree] orderRuns(runs, leftOut), when the caller kept it
 * @returns {{entries: Entry[], flat: boolean}}
 */
export function queryRuns(runs, leftOut, q, tree = orderRuns(runs, leftOut)) {
  if (isDefault(q)) return { entries: tree, flat: false };
  const needle = q.text.trim().toLowerCase();
  /** @type {Entry[]} */
  const kept = [];
  for (const e of tree) {
    const row = e.row;
    if (q.outcome !== null && outcomeKey(row) !== q.outcome) continue;
    if (q.toolErrors && !(row.tool_errors > 0)) continue;
    if (!matchesText(row, needle)) continue;
    kept.push(e);
  }
  const dir = q.desc ? -1 : 1;
  if (q.sort === "start") return { entries: kept.sort((a, b) => dir * (a.number - b.number)), flat: true };
  // each value read once, then indices sorted on plain arrays (ten thousand runs, one frame)
  const values = new Float64Array(kept.length);
  const at = new Float64Array(kept.length);
  for (let i = 0; i < kept.length; i++) {
    values[i] = sortValue(kept[i].row, q.sort);
    at[i] = kept[i].number;
  }
  const order = Array.from(kept, (_, i) => i);
  order.sort((i, j) => {
    const va = values[i];
    const vb = values[j];
    if (va === vb) return at[j] - at[i]; // ties: the newest first
    if (va === -Infinity) return 1; // unknown last, whichever way
    if (vb === -Infinity) return -1;
    return dir * (va - vb);
  });
  return { entries: order.map((i) => kept[i]), flat: true };
}
