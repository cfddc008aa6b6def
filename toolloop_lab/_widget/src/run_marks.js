// @ts-check
// The marks a run's row carries beside its outcome, each a small chip with words (colour is
// never the only carrier): a run whose tools failed says how many calls did. Another mark
// (a check's result, say) is one more entry of MARKS.

import { dot, h } from "./dom.js";
import { plural } from "./format.js";

/** @typedef {import("./run_rows.js").RunRow} RunRow */

/**
 * @typedef {object} Mark
 * @property {(row: RunRow) => boolean} shows whether the row carries it
 * @property {(row: RunRow) => HTMLElement} draw its chip
 */

/** @type {Mark[]} */
export const MARKS = [
  {
    shows: (row) => row.tool_errors > 0,
    draw(row) {
      const chip = h("span", "tl-chip tl-chip-error tl-r-mark tl-r-toolerr", dot("error"), h("span", null, String(row.tool_errors)));
      chip.title = `${plural(row.tool_errors, "tool call")} of this run failed`;
      chip.setAttribute("aria-label", chip.title);
      return chip;
    },
  },
];

/**
 * The marks of one row, in MARKS' order.
 * @param {RunRow} row
 * @returns {HTMLElement[]}
 */
export function runMarks(row) {
  return MARKS.filter((m) => m.shows(row)).map((m) => m.draw(row));
}
