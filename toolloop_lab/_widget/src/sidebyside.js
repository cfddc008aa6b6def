// @ts-check
// What a person changed at a pause, old and new side by side, from the intervention
// event's before and after: arguments key by key (each changed, added or removed one
// marked in words), a result or a hand-written answer next to what it replaced.

import { h, longText } from "./dom.js";
import { clip } from "./format.js";
import { jsonView } from "./json.js";

const VALUE_CHARS = 2000; // characters of one argument's value in the table

/** @type {Readonly<Record<string, [string, string]>>} the two columns' headings, by action */
const HEADINGS = {
  edit_args: ["The model's arguments", "Yours (what ran)"],
  skip: ["The call (never ran)", "Your answer"],
  edit_result: ["The tool's result", "Yours (what the model read)"],
};

/**
 * @param {any} v
 * @returns {boolean}
 */
const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * @param {any} v
 * @returns {string}
 */
function compact(v) {
  if (v === undefined) return "";
  try {
    return clip(JSON.stringify(v), VALUE_CHARS);
  } catch (_e) {
    return String(v);
  }
}

/**
 * Arguments key by key: the model's, yours, and what changed.
 * @param {Record<string, any>} before
 * @param {Record<string, any>} after
 * @returns {HTMLElement}
 */
function argsTable(before, after) {
  const [left, right] = HEADINGS.edit_args;
  const grid = h("div", "tl-diff", h("span", "tl-diff-head", "argument"), h("span", "tl-diff-head", left), h("span", "tl-diff-head", right), h("span", "tl-diff-head", ""));
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])];
  for (const k of keys) {
    const had = Object.hasOwn(before, k);
    const has = Object.hasOwn(after, k);
    const a = compact(before[k]);
    const b = compact(after[k]);
    const change = !had ? "added" : !has ? "removed" : a !== b ? "changed" : "";
    const cls = change ? `tl-diff-cell tl-diff-${change}` : "tl-diff-cell";
    const was = h("span", cls, had ? a : "—");
    const now = h("span", cls, has ? b : "—");
    // a narrow view stacks the cells: each says which side it is (our own words)
    was.dataset.side = "the model's";
    now.dataset.side = "yours";
    grid.append(h("span", "tl-diff-key", k), was, now, h("span", "tl-diff-mark tl-meta", change));
  }
  return grid;
}

/**
 * One column: its heading and its value.
 * @param {string} heading
 * @param {Node} value
 * @returns {HTMLElement}
 */
const column = (heading, value) => h("div", "tl-sxs-col", h("div", "tl-meta", heading), value);

/**
 * A written answer or a result: its text, and its status when it is an error.
 * @param {any} v
 * @returns {Node}
 */
function answer(v) {
  if (!isObject(v)) return jsonView(v, 1);
  const text = typeof v.content === "string" ? v.content : compact(v.content);
  const box = h("div", null, longText(text));
  if (v.status === "error") box.append(h("div", "tl-meta", "sent as an error"));
  return box;
}

/**
 * Old and new of one intervention, side by side (null: an append has no old).
 * @param {{action: string, before: any, after: any}} iv
 * @returns {HTMLElement | null}
 */
export function beforeAfter(iv) {
  const { action, before, after } = iv;
  if (before === null || before === undefined) return null;
  const [left, right] = HEADINGS[action] || ["Before", "After"];
  if (action === "edit_args" && isObject(after)) {
    if (isObject(before) && typeof before.raw === "string" && "error" in before) {
      // the model's arguments could not be read: its text and why, next to yours
      const raw = h("div", null, longText(before.raw), before.error ? h("div", "tl-meta", `could not be read: ${before.error}`) : null);
      return h("div", "tl-sxs", column(`${left} (as sent)`, raw), column(right, jsonView(after, 1)));
    }
    if (isObject(before)) return argsTable(before, after);
  }
  if (action === "skip" && isObject(before)) {
    const call = h("div", null, h("div", null, `${before.name || "tool"}`), jsonView(before.args || {}, 1));
    return h("div", "tl-sxs", column(left, call), column(right, answer(after)));
  }
  if (action === "edit_result") return h("div", "tl-sxs", column(left, answer(before)), column(right, answer(after)));
  return h("div", "tl-sxs", column(left, jsonView(before, 1)), column(right, jsonView(after, 1)));
}
