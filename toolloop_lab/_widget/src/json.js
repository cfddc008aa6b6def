// @ts-check
// JSON on the page: a collapsible tree (deep levels built when opened), and a tool's
// result shown as a tree when it is a JSON object or array, else as text (prose.js: the UI
// font for sentences, monospace for what looks like code or a log).

import { h } from "./dom.js";
import { plural } from "./format.js";
import { textView } from "./prose.js";

const MAX_JSON_ENTRIES = 200; // entries of one JSON level drawn before "… more"

/**
 * The value `text` holds when it is a JSON object or array; undefined otherwise.
 * @param {string} text
 * @returns {any}
 */
export function parseJson(text) {
  const t = text.trim();
  if (!t || (t[0] !== "{" && t[0] !== "[")) return undefined;
  try {
    return JSON.parse(t);
  } catch (_e) {
    return undefined;
  }
}

/**
 * @param {any} v
 * @returns {string}
 */
export function prettyJson(v) {
  try {
    return JSON.stringify(v, null, 2);
  } catch (_e) {
    return String(v);
  }
}

/**
 * Pretty JSON, each object and array collapsible; deep levels are built when opened.
 * @param {any} value
 * @param {number} [depth]
 * @returns {HTMLElement}
 */
export function jsonView(value, depth = 0) {
  if (value === null || typeof value !== "object") {
    const cls = value === null ? "tl-jnull" : typeof value === "string" ? "tl-jstr" : "tl-jnum";
    return h("span", cls, JSON.stringify(value));
  }
  const isArr = Array.isArray(value);
  /** @type {(string | number)[]} */
  const keys = isArr ? value.map((/** @type {unknown} */ _v, /** @type {number} */ i) => i) : Object.keys(value);
  if (!keys.length) return h("span", "tl-jpunct", isArr ? "[]" : "{}");
  const d = h("details", "tl-json");
  d.open = depth < 2;
  const summary = h("summary", "tl-jpunct", isArr ? `[${plural(keys.length, "item")}]` : `{${plural(keys.length, "key")}}`);
  d.append(summary);
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    const list = h("div", "tl-jlist");
    for (const k of keys.slice(0, MAX_JSON_ENTRIES)) {
      const line = h("div", "tl-jline");
      if (!isArr) line.append(h("span", "tl-jkey", JSON.stringify(k)), h("span", "tl-jpunct", ": "));
      line.append(jsonView(value[k], depth + 1));
      list.append(line);
    }
    if (keys.length > MAX_JSON_ENTRIES) list.append(h("div", "tl-muted", `… ${plural(keys.length - MAX_JSON_ENTRIES, "more entry", "more entries")}`));
    d.append(list);
  };
  if (d.open) build();
  d.addEventListener("toggle", () => d.open && build());
  return d;
}

/**
 * A tool's result: a JSON tree when it is a JSON object or array, else text.
 * @param {string} text
 * @returns {HTMLElement}
 */
export function resultView(text) {
  const parsed = parseJson(text);
  if (parsed !== undefined && typeof parsed === "object" && parsed !== null) return jsonView(parsed, 0);
  if (!text) return h("div", "tl-muted", "(empty)");
  return textView(text);
}
