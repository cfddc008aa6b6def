// @ts-check
// Text as a person reads it: a reply, a message or a tool's answer written as sentences
// shows in the UI's proportional font and wraps between words; what looks like code, data
// or a log (JSON, a traceback, indented lines, aligned columns, log lines) stays monospace,
// where alignment and exact characters matter.

import { longText } from "./dom.js";

const SAMPLE = 4000; // characters read to decide (a long text is judged by its start)
const LOG_LINE = /^\s*(?:\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\[?\d{2}:\d{2}:\d{2}|\[?(?:TRACE|DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\]?[\s:])/;
const TRACEBACK = /^(?:Traceback \(most recent call last\)|\s+File ".*", line \d+|\s+at \S+ \(.*:\d+:\d+\)|[\w.]*(?:Error|Exception): )/m;
const CODE_LINE = /^(?:\s{2,}|\t)(?![-*+•]\s|\d+[.)]\s)\S|[{};]\s*$|^\s*(?:def|class|import|from|return|function|const|let|var|#include|SELECT|INSERT|UPDATE)\b|^\s*<\/?[a-zA-Z][\w-]*[\s>]/;
const COLUMNS = /\S(?: {2,}|\t)\S|^\s*\|.*\|\s*$/;
const SYMBOLS = /[{}[\]<>=;$\\|`]/g;

/**
 * Whether `text` reads as code, data or a log rather than prose.
 * @param {string} text
 * @returns {boolean}
 */
export function looksLikeCode(text) {
  const t = text.slice(0, SAMPLE).trim();
  if (!t) return false;
  if ((t[0] === "{" && t.endsWith("}")) || (t[0] === "[" && t.endsWith("]"))) return true;
  if (t.startsWith("```") || TRACEBACK.test(t)) return true;
  const lines = t.split("\n").filter((l) => l.trim());
  const share = (/** @type {RegExp} */ re) => lines.filter((l) => re.test(l)).length / lines.length;
  if (lines.length >= 2 && (share(LOG_LINE) >= 0.5 || share(CODE_LINE) >= 0.4 || share(COLUMNS) >= 0.5)) return true;
  if (lines.length === 1 && LOG_LINE.test(t)) return true;
  return (t.match(SYMBOLS) || []).length / t.length > 0.05;
}

/**
 * A text, in the UI font when it is prose and in monospace when it looks like code (its
 * first characters shown until "Show all", as dom.js longText does).
 * @param {string} text
 * @param {string} [cls] more classes (tl-streaming)
 * @returns {HTMLElement}
 */
export function textView(text, cls) {
  const kind = looksLikeCode(text) ? "tl-code-text" : "tl-prose";
  return longText(text, cls ? `${kind} ${cls}` : kind);
}
