// @ts-check
// The words a person reads for the codes of the event vocabulary, and how money reads.
// The words come from toolloop_lab/words.json, the file Python's
// toolloop_lab/_support/words.py reads too; usd() writes the digits
// toolloop_lab._spend.usage.format_usd writes (tests compare them).

import words from "../../words.json" with { type: "json" };

/** @typedef {Readonly<Record<string, string>>} Table */

export const STATUS = /** @type {Table} */ (words.status);
export const OUTCOME = /** @type {Table} */ (words.outcome);
export const SYNTH = /** @type {Table} */ (words.synthesis_reason);
export const NOT_RUN = /** @type {Table} */ (words.not_run);
export const FAILED = /** @type {Table} */ (words.failed);
export const CUT_SHORT = /** @type {Table} */ (words.cut_short);
export const INTERVENTION = /** @type {Table} */ (words.intervention);
export const GATE = /** @type {Table} */ (words.gate);
export const GATE_NAME = /** @type {Table} */ (words.gate_name);
export const ROUND_STATE = /** @type {Table} */ (words.round_state);
export const ROUND_KIND = /** @type {Table} */ (words.round_kind);
export const TOOL_OUTCOME = /** @type {Table} */ (words.tool_outcome);
export const CALL_CHANGE = /** @type {Table} */ (words.call_change);
export const CALL_CHANGE_PART = /** @type {Table} */ (words.call_change_part);
export const GATE_TRIPPED = /** @type {Table} */ (words.gate_tripped);
export const BUDGET_STOP = /** @type {Table} */ (words.budget_stop);
export const COUNTS = /** @type {Table} */ (words.counts);
export const MCP = /** @type {Table} */ (words.mcp);
/** What a run's token counts are, beside its totals (words.py's USAGE): `estimated` when the
 * run's total usage is (a provider or a span reported none), as the Python views say it. */
export const USAGE = /** @type {Table} */ (words.usage);

/**
 * The code of the status table a run's status reads as: a run the USD limit stopped has
 * its own (the limit did its job; the run did not fail), every other its status
 * (words.py's shown_status).
 * @param {string} status
 * @param {string | null | undefined} outcome
 * @returns {string}
 */
export function statusCode(status, outcome) {
  return status === "failed" && outcome === "usd_budget_exhausted" ? outcome : status;
}

/**
 * A template of the words file with its `{names}` filled in.
 * @param {string} template
 * @param {Record<string, string>} values
 * @returns {string}
 */
export function fill(template, values) {
  return template.replace(/\{(\w+)\}/g, (all, name) => (Object.hasOwn(values, name) ? values[name] : all));
}

/**
 * `code` in words from `table`, or `code` itself when it has none (never a prototype's key).
 * @param {Table} table
 * @param {string} code
 * @returns {string}
 */
export function word(table, code) {
  return Object.hasOwn(table, code) ? table[code] : code;
}

/**
 * A tool call's error reason in words: never run, failed, then cut short (as words.py).
 * @param {string} code
 * @returns {string}
 */
export function reasonWords(code) {
  for (const table of [NOT_RUN, FAILED, CUT_SHORT]) if (Object.hasOwn(table, code)) return table[code];
  return code;
}

/**
 * What happened to one tool call, as a person says it ("ok", "raised ValueError", "unknown
 * tool", "bad arguments", "timed out", "not run (token budget)", "answered by you"):
 * words.py's tool_outcome, from the same table.
 * @param {string} status success, error, cancelled, running, queued or not_run
 * @param {string | null} reason its error reason
 * @param {boolean} ran whether its tool ran
 * @param {string | null} [errorType] the class name of the exception its tool raised
 * @returns {string}
 */
export function toolOutcome(status, reason, ran, errorType) {
  if (status === "cancelled" && ran) return word(CUT_SHORT, reason && Object.hasOwn(CUT_SHORT, reason) ? reason : "cancelled");
  if (!ran || status === "not_run") {
    if (reason === "skipped") return TOOL_OUTCOME.answered_by_you;
    return reason ? `${TOOL_OUTCOME.not_run} (${reasonWords(reason)})` : TOOL_OUTCOME.not_run;
  }
  if (status === "error") {
    if (errorType && (!reason || reason === "tool_error")) return `${TOOL_OUTCOME.raised} ${errorType}`;
    return reason ? reasonWords(reason) : TOOL_OUTCOME.error;
  }
  return word(TOOL_OUTCOME, status);
}

/**
 * How a run ended, with why a final-answer call ran when one did (words.py's outcome_text).
 * @param {string} outcome
 * @param {string | null | undefined} reason
 * @returns {string}
 */
export function outcomeWords(outcome, reason) {
  const said = word(OUTCOME, outcome);
  return outcome === "synthesis" && reason ? `${said} (${word(SYNTH, reason)})` : said;
}

const SIGNIFICANT = 4;
const DECIMAL = /^([+-]?)(\d*)(?:\.(\d*))?(?:e([+-]?\d+))?$/i;

/**
 * `$0.0002187`, `$1,234.57`: four significant digits (half up), at least cents, trailing
 * zeros dropped, never an exponent; `unpriced` when unknown. Rounds the decimal digits the
 * amount is written with, as Python's Decimal does, so both sides give the same string.
 * @param {number | string | null | undefined} amount
 * @returns {string}
 */
export function usd(amount) {
  if (amount === null || amount === undefined) return "unpriced";
  const n = Number(amount);
  const m = Number.isFinite(n) ? DECIMAL.exec(typeof amount === "string" ? amount.trim() : String(n)) : null;
  if (!m) return "unpriced";
  const frac = m[3] || "";
  const digits = ((m[2] || "") + frac).replace(/^0+/, "");
  if (!digits) return "$0";
  const exp = Number(m[4] || 0) - frac.length; // the amount is digits × 10^exp
  const places = Math.max(2, SIGNIFICANT - 1 - (digits.length - 1 + exp));
  const keep = digits.length + exp + places; // digits left of the rounding point
  let units; // the amount in 10^-places
  if (keep >= digits.length) units = BigInt(digits) * 10n ** BigInt(keep - digits.length);
  else {
    units = keep > 0 ? BigInt(digits.slice(0, keep)) : 0n;
    if (keep >= 0 && digits[keep] >= "5") units += 1n;
  }
  const text = units.toString().padStart(places + 1, "0");
  const whole = text.slice(0, -places).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const cents = text.slice(-places).replace(/0+$/, "");
  const shown = cents ? `${whole}.${cents}` : whole;
  return m[1] === "-" && shown !== "0" ? `-$${shown}` : `$${shown}`;
}
