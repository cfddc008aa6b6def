// @ts-check
// How numbers read on the page: token counts, durations, shares and counted nouns. Money is
// words.js's usd(), which writes the digits Python's views write.

const nf = new Intl.NumberFormat("en-US");

/**
 * An integer with thousands separators (`12,345`).
 * @param {number} n
 * @returns {string}
 */
export function count(n) {
  return nf.format(n);
}

/**
 * `text` with its first letter upper-case (a badge reads "Finished", the words file says
 * "finished").
 * @param {string} text
 * @returns {string}
 */
export function capitalized(text) {
  return text ? text[0].toUpperCase() + text.slice(1) : text;
}

/**
 * Text cut to its first `limit` characters (code points, as Python counts them), ending in
 * the one cut marker Python's views write too (`_support/escape.py` clip): `… (N chars)`,
 * N the whole length, so a reader can tell a cut text from a short one.
 * @param {string} text
 * @param {number} limit
 * @returns {string}
 */
export function clip(text, limit) {
  const points = Array.from(text);
  return points.length > limit ? `${points.slice(0, limit).join("")}… (${nf.format(points.length)} chars)` : text;
}

const BIDI = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/g;

/**
 * `text` with every bidirectional control shown as its code (`\u202e`), so a name like
 * `invoice_\u202efdp.exe` never reads `invoice_exe.pdf`: the rule and the characters of
 * `_support/escape.py`'s `visible` (embeddings, overrides, isolates, and the marks LRM, RLM
 * and ALM). The DOM obeys them in text nodes, attributes and canvas text alike, so every
 * string the page shows passes here (dom.js's `h` and `longText` do it for their text);
 * the data itself (the fold, what Copy copies, an argument being edited) keeps them.
 * @param {string} text
 * @returns {string}
 */
export function visible(text) {
  return text.replace(BIDI, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * A token count, or a dash when unknown.
 * @param {number | null | undefined} n
 * @returns {string}
 */
export function tokens(n) {
  return n === null || n === undefined ? "—" : nf.format(n);
}

/**
 * Seconds as a person reads them: `850 ms`, `2.5 s`, `3 min 04 s`, `1 h 02 min`.
 * @param {number | null | undefined} s
 * @returns {string}
 */
export function duration(s) {
  if (s === null || s === undefined || !isFinite(s)) return "—";
  if (s < 0) s = 0;
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  const r = Math.floor(s - m * 60);
  if (m < 60) return `${m} min ${String(r).padStart(2, "0")} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} min`;
}

/**
 * A number sent as a number or a decimal string; null when absent.
 * @param {number | string | null | undefined} s
 * @returns {number | null}
 */
export function num(s) {
  return s === null || s === undefined ? null : Number(s);
}

/**
 * A fraction as a percentage with one decimal (`42.0%`), or a dash.
 * @param {number | null | undefined} f
 * @returns {string}
 */
export function pct(f) {
  return f === null || f === undefined || !isFinite(f) ? "—" : `${(f * 100).toFixed(1)}%`;
}

/**
 * `1 round`, `3 rounds` (or the given plural).
 * @param {number} n
 * @param {string} word
 * @param {string} [many]
 * @returns {string}
 */
export function plural(n, word, many) {
  return `${nf.format(n)} ${n === 1 ? word : many || word + "s"}`;
}
