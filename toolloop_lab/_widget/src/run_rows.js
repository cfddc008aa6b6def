// @ts-check
// The run list's rows as Python sends them (_widget/runs.py): folded into the store as
// they change, then ordered as the list shows them (newest top-level run first, each
// nested run under the run that called it, in the order they started), labelled and
// summed up. No DOM: run_list.js draws what this module says.

import { capitalized, count, plural } from "./format.js";
import { STATUS, outcomeWords, statusCode, word } from "./words.js";

/**
 * @typedef {object} RunRow one run as the run list shows it (runview.RunSummary on the wire)
 * @property {string} run_id
 * @property {string | null} parent_run_id
 * @property {string | null} parent_tool_call_id
 * @property {string | null} parent_tool_name
 * @property {string | null} name
 * @property {string[]} tags
 * @property {string} source "loop", "langchain" or "otel"
 * @property {string} status
 * @property {string | null} outcome
 * @property {number} rounds
 * @property {number} tool_errors tool calls that ended in an error
 * @property {string | null} question its first user message, cut
 * @property {number} input_tokens
 * @property {number} output_tokens
 * @property {string | null} cost_usd a decimal string; null: unpriced
 * @property {number} total_input_tokens this run and every run nested under it
 * @property {number} total_output_tokens
 * @property {string | null} total_cost_usd
 * @property {string | null} started_at ISO 8601
 * @property {number} duration_s
 * @property {number} offset_s seconds from its top-level run's start to its own
 * @property {[string, number, number, boolean][]} spans a nested run's calls, tools, pruning and pauses
 * @property {number} spans_left_out
 * @property {import("./checks.js").CheckMark | null} [checks] the checks a person gave the debugger, judged on this run (checks.js)
 */

/**
 * @typedef {object} RunsPart the `runs` part of an events message
 * @property {boolean} reset every row follows (a new page)
 * @property {RunRow[]} rows the rows that changed
 * @property {number} left_out runs the session no longer keeps
 * @property {string[]} [dropped] runs left out since the last message
 * @property {string | null} [pinned] the run a person picked to show (null: the newest)
 * @property {string | null} [let_go] what the debugger let go, in words
 */

/**
 * @typedef {object} RunsHolder where a store keeps the run list (store.js's fields)
 * @property {Map<string, RunRow>} runs in the order the runs started
 * @property {number} runsLeftOut
 * @property {string | null} runsPinned
 * @property {number} runsVersion grows with every change of the rows
 * @property {string | null} [runsLetGo]
 */

/**
 * @typedef {object} Entry one line of the list
 * @property {RunRow} row
 * @property {number} depth 0 for a top-level run, 1 for a run it called…
 * @property {number} number the run's place among every run seen (1 = the first)
 */

/**
 * Fold one `runs` part in (a reset replaces every row).
 * @param {RunsHolder} s
 * @param {RunsPart} part
 */
export function foldRuns(s, part) {
  if (!part || typeof part !== "object") return;
  if (part.reset) s.runs = new Map();
  for (const id of part.dropped || []) s.runs.delete(id);
  for (const row of part.rows || []) if (row && typeof row.run_id === "string") s.runs.set(row.run_id, row);
  if (typeof part.left_out === "number") s.runsLeftOut = part.left_out;
  if (part.pinned !== undefined) s.runsPinned = part.pinned;
  if (part.let_go !== undefined) s.runsLetGo = part.let_go;
  for (const row of part.rows || []) if (row && typeof row.tool_errors !== "number") row.tool_errors = 0; // rows saved before it
  // only a change of the rows makes the list order them again (a pin alone redraws its rows)
  if (part.reset || (part.rows && part.rows.length) || (part.dropped && part.dropped.length) || typeof part.left_out === "number") s.runsVersion++;
}

/**
 * The rows as the list shows them: the newest top-level run first, each run's nested
 * runs right under it (indented, in the order they started). A run whose parent is not
 * held is top-level; rows that name each other as parents (no real stream does) come last.
 * @param {Map<string, RunRow>} runs
 * @param {number} [leftOut] runs seen before the first held (numbers stay the same)
 * @returns {Entry[]}
 */
export function orderRuns(runs, leftOut = 0) {
  /** @type {Map<string, RunRow[]>} */
  const children = new Map();
  /** @type {Map<string, number>} */
  const number = new Map();
  /** @type {RunRow[]} */
  const tops = [];
  let n = leftOut;
  for (const row of runs.values()) {
    number.set(row.run_id, ++n);
    const up = row.parent_run_id;
    if (up !== null && up !== row.run_id && runs.has(up)) {
      const kids = children.get(up);
      if (kids) kids.push(row);
      else children.set(up, [row]);
    } else tops.push(row);
  }
  /** @type {Entry[]} */
  const out = [];
  if (!children.size) {
    // no run nested in another held: the newest first, no walk
    for (let i = tops.length - 1; i >= 0; i--) out.push({ row: tops[i], depth: 0, number: number.get(tops[i].run_id) || 0 });
    return out;
  }
  const seen = new Set();
  /** @type {(row: RunRow, depth: number) => void} */
  const walk = (row, depth) => {
    /** @type {[RunRow, number][]} */
    const stack = [[row, depth]];
    while (stack.length) {
      const [r, d] = /** @type {[RunRow, number]} */ (stack.pop());
      if (seen.has(r.run_id)) continue;
      seen.add(r.run_id);
      out.push({ row: r, depth: d, number: number.get(r.run_id) || 0 });
      const kids = children.get(r.run_id) || [];
      for (let i = kids.length - 1; i >= 0; i--) stack.push([kids[i], d + 1]);
    }
  };
  for (let i = tops.length - 1; i >= 0; i--) walk(tops[i], 0);
  for (const row of runs.values()) if (!seen.has(row.run_id)) walk(row, 0);
  return out;
}

/**
 * How many runs are nested under `runId` (at any depth) among the rows held.
 * @param {Map<string, RunRow>} runs
 * @param {string} runId
 * @returns {number}
 */
export function nestedCount(runs, runId) {
  let found = 0;
  for (const row of runs.values()) {
    if (row.parent_run_id === null) continue; // most runs: top level, nothing to walk
    const seen = new Set([row.run_id]);
    for (let /** @type {string | null} */ up = row.parent_run_id; up !== null && runs.has(up) && !seen.has(up); up = /** @type {RunRow} */ (runs.get(up)).parent_run_id) {
      if (up === runId) {
        found++;
        break;
      }
      seen.add(up);
    }
  }
  return found;
}

/**
 * What a run is called in the list: its name, else the tool that called it (a nested
 * run), else "run N".
 * @param {Entry} entry
 * @returns {string}
 */
export function runName(entry) {
  const row = entry.row;
  if (row.name) return row.name;
  if (entry.depth > 0) return row.parent_tool_name ? `${row.parent_tool_name} (nested run)` : "nested run";
  return `run ${count(entry.number)}`;
}

/**
 * Who called a nested run, in words ("called by tool `research`"); "" at top level.
 * @param {Entry} entry
 * @returns {string}
 */
export function calledBy(entry) {
  if (entry.depth === 0) return "";
  const tool = entry.row.parent_tool_name;
  return tool ? `called by tool \`${tool}\`` : "called by a tool";
}

/**
 * How a run ended (or that it still runs), in the words file's words.
 * @param {RunRow} row
 * @returns {string}
 */
export function runOutcome(row) {
  return row.outcome ? outcomeWords(row.outcome, null) : capitalized(word(STATUS, statusCode(row.status, row.outcome)));
}

/**
 * The dot a run's row shows (the header badge's states): a run the USD limit stopped reads
 * as the header reads it (its own status, a warning: the limit did its job), never as an
 * error (statusCode, words.py's shown_status).
 * @param {RunRow} row
 * @returns {string}
 */
export function runDot(row) {
  const st = statusCode(row.status, row.outcome);
  return st === "finished" ? "answer" : st === "failed" ? "error" : st === "cancelled" ? "stopped" : st === "usd_budget_exhausted" ? "warn" : st === "running" || st === "paused" ? "running" : "idle";
}

/**
 * A wall-clock start as a person reads it, short enough for its column (local time): the
 * time of day today, the date and minute earlier this year, the date before; "—" when
 * unknown.
 * @param {string | null} iso
 * @param {Date} [today]
 * @returns {string}
 */
export function startTime(iso, today = new Date()) {
  const when = iso ? new Date(iso) : null;
  if (!when || Number.isNaN(when.getTime())) return "—";
  const pad = (/** @type {number} */ v) => String(v).padStart(2, "0");
  const day = `${pad(when.getMonth() + 1)}-${pad(when.getDate())}`;
  if (when.toDateString() === today.toDateString()) return `${pad(when.getHours())}:${pad(when.getMinutes())}:${pad(when.getSeconds())}`;
  if (when.getFullYear() === today.getFullYear()) return `${day} ${pad(when.getHours())}:${pad(when.getMinutes())}`;
  return `${when.getFullYear()}-${day}`;
}

/**
 * The list's title: how many runs, and how many earlier ones are no longer kept.
 * @param {number} held
 * @param {number} leftOut
 * @returns {string}
 */
export function runsTitle(held, leftOut) {
  const runs = plural(held, "run");
  return leftOut ? `${runs} (${count(leftOut)} earlier not kept)` : runs;
}
