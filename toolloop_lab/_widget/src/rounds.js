// @ts-check
// What a round reads as: its state, number, title, cost and own time, and whether it
// matches the timeline's filter. Derived from the store; no DOM.

import { capitalized, count, duration } from "./format.js";
import { findTool, isDone } from "./run.js";
import { runNow } from "./store.js";
import { CUT_SHORT, ROUND_KIND, SYNTH, TOOL_OUTCOME, reasonWords, toolOutcome, word } from "./words.js";

/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./run.js").Round} Round */
/** @typedef {import("./run.js").Tool} Tool */

/**
 * A tool call that never ran, in words.
 * @param {Tool} t
 * @returns {string}
 */
export function notRunLabel(t) {
  if (t.answeredByHand) return "answered by you";
  return t.reason ? `not run (${reasonWords(t.reason)})` : "not run";
}

/**
 * What happened to a tool call, in words (its chip's tooltip): "raised ValueError",
 * "unknown tool", "bad arguments", "timed out", "ok", "answered by you"…, and how long it
 * ran when it did.
 * @param {Tool} t
 * @returns {string}
 */
export function toolSaid(t) {
  const said = toolWords(t);
  return t.ran && t.duration !== null && t.status !== "running" ? `${said} · ${duration(t.duration)}` : said;
}

/**
 * What happened to a tool call, in words only (toolSaid without its time).
 * @param {Tool} t
 * @returns {string}
 */
export function toolWords(t) {
  return t.answeredByHand ? TOOL_OUTCOME.answered_by_you : toolOutcome(t.status, t.reason, t.ran && t.status !== "not_run", t.errorType);
}

/**
 * A tool that had begun when the run was stopped (or ended): it ran, and was cut short.
 * @param {Tool} t
 * @returns {string}
 */
export function cutShortLabel(t) {
  return CUT_SHORT[t.reason === "unfinished" || t.reason === "interrupted" ? t.reason : "cancelled"];
}

/**
 * The dot a tool call's status shows.
 * @param {Tool} t
 * @returns {string}
 */
export function toolDot(t) {
  return t.status === "success" ? "answer" : t.status === "error" ? "error" : t.status === "running" ? "running" : t.status === "cancelled" ? "stopped" : "idle";
}

/**
 * The name of the tool call `id` of round `r` ("tool" when unknown).
 * @param {Round} r
 * @param {string} id
 * @returns {string}
 */
export function lastToolName(r, id) {
  const t = findTool(r, id);
  return t ? t.name : "tool";
}

/**
 * A round's state (words.json's round_state codes): paused, running, error, warn,
 * stopped, answer, skipped or ok.
 * @param {Store} s
 * @param {Round} r
 * @returns {string}
 */
export function roundState(s, r) {
  const live = !isDone(s.run);
  const p = s.control.paused_at;
  if (live && p && p.round === r.n) return "paused";
  if (live && !r.call && !r.tools.length) return "running";
  if (r.call && r.call.interrupted === "failed") return "error";
  if (live && ((r.call && !r.call.done) || r.tools.some((t) => t.status === "running" || t.status === "queued"))) return "running";
  if (r.tools.some((t) => t.ran && t.status === "error")) return "error";
  if (r.call && r.call.truncated) return "warn";
  if (r.tools.some((t) => t.status === "cancelled" && t.reason === "interrupted")) return "paused"; // waits for input
  if ((r.call && r.call.interrupted === "cancelled") || r.tools.some((t) => t.status === "cancelled") || (r.tools.length && r.tools.every((t) => t.status === "not_run" && t.reason === "cancelled"))) return "stopped";
  if (r.purpose === "synthesis" || (r.call && r.call.done && !r.tools.length)) return "answer";
  if (r.tools.some((t) => t.status === "not_run" && !t.answeredByHand)) return "skipped";
  return "ok";
}

/**
 * A round's number as the person reads it (a fork's rounds read as the original's).
 * @param {Store} s
 * @param {number} n
 * @returns {number}
 */
export function shown(s, n) {
  return n + (s.offset || 0);
}

/**
 * @param {Store} s
 * @param {Round} r
 * @returns {string}
 */
export function roundLabel(s, r) {
  return r.purpose === "synthesis" ? "final" : String(shown(s, r.n));
}

/**
 * @param {Store} s
 * @param {Round} r
 * @returns {string}
 */
export function roundTitle(s, r) {
  if (r.purpose === "synthesis") {
    const why = r.synthesis ? SYNTH[r.synthesis.reason] || r.synthesis.reason : null;
    const said = capitalized(word(ROUND_KIND, "synthesis"));
    return why ? `${said} (${why})` : said;
  }
  return `Round ${count(shown(s, r.n))}`;
}

/**
 * What a round cost: its model call and its pruning calls (null when unpriced).
 * @param {Round} r
 * @returns {number | null}
 */
export function roundCost(r) {
  const a = r.call && r.call.usage ? r.call.usage.cost : 0;
  const b = r.pruneUsage.cost;
  const c = r.summaryUsage.cost;
  return a === null || b === null || c === null ? null : a + b + c;
}

/**
 * The run time a round ended at (now, for what is still open).
 * @param {Store} s
 * @param {Round} r
 * @returns {number}
 */
export function roundEnd(s, r) {
  let end = r.tLast !== null ? r.tLast : r.t0 || 0;
  const c = r.call;
  if (c) end = Math.max(end, c.t1 !== null ? c.t1 : runNow(s));
  for (const t of r.tools) if (t.ran) end = Math.max(end, t.tEnd !== null ? t.tEnd : t.tStart !== null ? runNow(s) : end);
  for (const p of r.prunings) end = Math.max(end, p.t1 !== null && p.t1 !== undefined ? p.t1 : runNow(s));
  for (const c of r.summaries) end = Math.max(end, c.t1 !== null ? c.t1 : runNow(s));
  return end;
}

/**
 * A round's own time: its span less what pauses held it (RunView's RoundRow.duration_s).
 * @param {Store} s
 * @param {Round} r
 * @returns {number | null}
 */
export function roundTime(s, r) {
  return r.t0 === null ? null : Math.max(0, roundEnd(s, r) - r.t0 - r.paused);
}

/**
 * A round's searchable text, lower case (kept until the round changes).
 * @param {Round} r
 * @returns {string}
 */
function haystack(r) {
  if (r.hayV !== r.v || r.hay === null) {
    const parts = [r.call ? r.call.text : ""];
    for (const t of r.tools) parts.push(t.name, JSON.stringify(t.args), t.content, t.reason || "");
    if (r.synthesis) parts.push(r.synthesis.prompt);
    r.hay = parts.join("\n").toLowerCase();
    r.hayV = r.v;
  }
  return r.hay;
}

/**
 * Whether a round passes the timeline's filter (errors only, a tool, a search).
 * @param {Store} s
 * @param {Round} r
 * @returns {boolean}
 */
export function matches(s, r) {
  const ui = s.ui;
  if (ui.filter === "errors" && !isErrorRound(s, r)) return false;
  if (ui.tool && !r.tools.some((t) => t.name === ui.tool)) return false;
  if (ui.search && !haystack(r).includes(ui.search)) return false;
  return true;
}

/**
 * Whether a round went wrong (a failed call or tool, a reply cut off): what "errors only"
 * shows and the next-error key moves to.
 * @param {Store} s
 * @param {Round} r
 * @returns {boolean}
 */
export function isErrorRound(s, r) {
  const st = roundState(s, r);
  return st === "error" || st === "warn";
}

/**
 * The round the detail pane shows: the one picked, else the newest.
 * @param {Store} s
 * @returns {Round | null}
 */
export function selectedRound(s) {
  if (s.ui.selected !== null) {
    const r = s.run.byNumber.get(s.ui.selected);
    if (r) return r;
  }
  return s.run.rounds[s.run.rounds.length - 1] || null;
}
