// @ts-check
// Two runs side by side, as Python's _widget/comparison.py writes them (the `comparison`
// trait: two runs picked, or a fork next to its original): both runs' totals, then round
// by round the tools called with their arguments and results and the replies, what
// changed marked (calls added, removed or changed; deleted and inserted words), and rounds
// that did the same collapsed to one line. Every text from a run is a text node.

import { button, dot, h } from "./dom.js";
import { capitalized, count, plural, tokens, visible } from "./format.js";
import { CALL_CHANGE, CALL_CHANGE_PART, ROUND_KIND, outcomeWords, usd, word } from "./words.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */

const ROUNDS_AT_ONCE = 10; // rounds that differ drawn at first, and per "Show more"
/** @typedef {[string, string, string]} Op a diff's [tag, a's part, b's part] */

/**
 * @typedef {object} ViewOptions
 * @property {(() => void) | null} [close] what the close button does (no button without it)
 * @property {(() => void) | null} [swap] compare again with the sides swapped (no button without it)
 */

/**
 * @param {number | null | undefined} v
 * @param {(n: number) => string} fmt
 * @returns {string}
 */
function delta(v, fmt) {
  if (v === null || v === undefined || !isFinite(v)) return "—";
  return `${v > 0 ? "+" : v < 0 ? "−" : "±"}${fmt(Math.abs(v))}`;
}

/** @param {string | null | undefined} v */
const usdDelta = (v) => (v === null || v === undefined ? "—" : delta(Number(v), usd));

/**
 * One side of a text diff: equal parts as text, the rest as marked spans (a's deleted,
 * b's inserted), each a text node.
 * @param {Op[]} ops
 * @param {"a" | "b"} side
 * @returns {HTMLElement}
 */
export function diffText(ops, side) {
  const pre = h("pre", "tl-text tl-cmp-text");
  for (const [tag, a, b] of ops) {
    const part = side === "a" ? a : b;
    if (!part) continue;
    if (tag === "equal") pre.append(document.createTextNode(visible(part)));
    else pre.append(h("span", side === "a" ? "tl-del" : "tl-ins", part));
  }
  return pre;
}

/**
 * A text as one side shows it: marked by `ops` when the sides differ, else plain.
 * @param {string} text
 * @param {Op[] | null | undefined} ops
 * @param {"a" | "b"} side
 * @returns {HTMLElement}
 */
function sideText(text, ops, side) {
  if (ops) return diffText(ops, side);
  return h("pre", "tl-text tl-cmp-text", text);
}

/**
 * The dot of a call: how it ended.
 * @param {any} call
 * @returns {string}
 */
function callDot(call) {
  if (!call.ran) return "skipped";
  return call.status === "success" ? "answer" : call.status === "error" ? "error" : call.status === "cancelled" ? "stopped" : "idle";
}

/**
 * @param {string} mark
 * @param {string[]} parts
 * @returns {HTMLElement}
 */
function markChip(mark, parts) {
  const what = parts.length ? `: ${parts.map((p) => word(CALL_CHANGE_PART, p)).join(", ")}` : "";
  return h("span", `tl-chip tl-mark tl-mark-${mark}`, word(CALL_CHANGE, mark) + what);
}

/**
 * One side of a pair of calls (an empty cell when that side lacks it).
 * @param {any} call
 * @param {any} pair
 * @param {"a" | "b"} side
 * @param {string} label
 * @returns {HTMLElement}
 */
function callCell(call, pair, side, label) {
  const cell = h("div", `tl-cmp-cell tl-cmp-${side}`, h("span", "tl-cmp-tag", `${label}: `));
  if (!call) {
    cell.classList.add("tl-cmp-none");
    cell.append(h("span", "tl-meta", "no such call"));
    return cell;
  }
  const head = h("div", "tl-cmp-call", h("span", `tl-chip tl-chip-${call.ran ? call.status : "not_run"}`, dot(callDot(call)), call.name), h("span", "tl-meta", call.said));
  cell.append(head, h("div", "tl-cmp-what", "arguments"), sideText(call.args, pair.args_diff, side));
  cell.append(h("div", "tl-cmp-what", "result"), sideText(call.result, pair.result_diff, side));
  return cell;
}

/**
 * @param {string} what
 * @param {any} side
 * @param {"a" | "b"} key
 * @param {string} label
 * @param {(side: any) => Node} body
 * @returns {HTMLElement}
 */
function cell(what, side, key, label, body) {
  const c = h("div", `tl-cmp-cell tl-cmp-${key}`, h("span", "tl-cmp-tag", `${label}: `));
  if (!side) {
    c.classList.add("tl-cmp-none");
    c.append(h("span", "tl-meta", "no such round"));
    return c;
  }
  c.append(h("div", "tl-cmp-what", what), body(side));
  return c;
}

/**
 * What a round's title says: "Round 3", or the final-answer call.
 * @param {number | null} n
 * @returns {string}
 */
function roundName(n) {
  return n === null ? capitalized(word(ROUND_KIND, "synthesis")) : `Round ${count(n)}`;
}

/**
 * The chips that say at a glance what differs in a round.
 * @param {any} row
 * @param {string[]} labels
 * @returns {HTMLElement[]}
 */
function roundChips(row, labels) {
  const chips = [];
  if (!row.a || !row.b) chips.push(h("span", "tl-chip tl-mark tl-mark-added", `only in ${labels[row.a ? 0 : 1]}`));
  for (const p of row.calls) {
    if (p.mark === "same") continue;
    const call = p.mark === "added" ? row.b.calls[p.b] : row.a.calls[p.a];
    chips.push(h("span", `tl-chip tl-mark tl-mark-${p.mark}`, `${call.name} ${word(CALL_CHANGE, p.mark)}`));
  }
  if (row.text_diff) chips.push(h("span", "tl-chip tl-mark tl-mark-changed", `reply ${word(CALL_CHANGE, "changed")}`));
  return chips;
}

/**
 * A round that differs: its chips, then the two sides call by call, reply, errors, spend.
 * @param {any} row
 * @param {string[]} labels
 * @returns {HTMLElement}
 */
export function roundView(row, labels) {
  const box = h("section", "tl-cmp-round");
  box.dataset.round = row.round === null ? "final" : String(row.round);
  const spend = h("span", "tl-meta tl-num", `${delta(row.tokens_delta, tokens)} tokens · ${usdDelta(row.cost_delta_usd)}`);
  box.append(h("div", "tl-cmp-rhead", h("span", "tl-strong", roundName(row.round)), ...roundChips(row, labels), h("span", "tl-grow"), spend));
  const sides = h("div", "tl-cmp-sides");
  sides.append(h("div", "tl-cmp-col tl-cmp-a", labels[0]), h("div", "tl-cmp-col tl-cmp-b", labels[1]));
  for (const p of row.calls) {
    const a = p.a === null ? null : row.a.calls[p.a];
    const b = p.b === null ? null : row.b.calls[p.b];
    if (p.mark !== "same") sides.append(h("div", "tl-cmp-span", markChip(p.mark, p.parts)));
    sides.append(callCell(a, p, "a", labels[0]), callCell(b, p, "b", labels[1]));
  }
  if (!row.calls.length) sides.append(h("div", "tl-cmp-span tl-meta", "no tool calls"));
  /** @param {"a" | "b"} k */
  const reply = (k) => cell("reply", row[k], k, labels[k === "a" ? 0 : 1], (x) => (x.text || row.text_diff ? sideText(x.text, row.text_diff, k) : h("span", "tl-meta", "no text")));
  sides.append(reply("a"), reply("b"));
  if ((row.a && row.a.errors.length) || (row.b && row.b.errors.length)) {
    /** @param {"a" | "b"} k */
    const errs = (k) => cell("model call failed", row[k], k, labels[k === "a" ? 0 : 1], (x) => h("div", null, ...x.errors.map((/** @type {string} */ e) => h("div", "tl-flag", dot("error"), h("span", null, e)))));
    sides.append(errs("a"), errs("b"));
  }
  /** @param {"a" | "b"} k */
  const cost = (k) => cell("spend", row[k], k, labels[k === "a" ? 0 : 1], (x) => h("span", "tl-num", `${tokens(x.tokens)} tokens · ${usd(x.cost_usd)}`));
  sides.append(cost("a"), cost("b"));
  for (const note of row.notes || []) sides.append(h("div", "tl-cmp-span tl-meta", capitalized(note) + "."));
  box.append(sides);
  return box;
}

/**
 * Rounds that did the same, as one line.
 * @param {any} row
 * @param {string[]} [labels]
 * @returns {HTMLElement}
 */
export function sameView(row, labels = ["A", "B"]) {
  const first = row.round;
  const last = row.last;
  const range = row.count === 1 ? roundName(first) : `Rounds ${first === null ? "" : count(first)}–${last === null ? word(ROUND_KIND, "synthesis") : count(last)}`;
  const tools = row.tools.length ? row.tools.join(", ") + (row.more_tools ? ` and ${plural(row.more_tools, "more tool")}` : "") : "no tool calls";
  // the rounds did the same; what they spent may differ (a longer prompt before them)
  const each = row.tokens_b === undefined || row.tokens_b === row.tokens ? `${tokens(row.tokens)} tokens each run` : `${labels[0]}: ${tokens(row.tokens)} tokens, ${labels[1]}: ${tokens(row.tokens_b)} tokens`;
  return h("div", "tl-cmp-same", dot("ok"), h("span", "tl-strong", `${range} the same`), h("span", "tl-meta", ` · ${tools} · ${each}`));
}

/**
 * Both runs' figures, side by side, with what changed.
 * @param {any} c
 * @param {string[]} labels
 * @returns {HTMLElement}
 */
function totals(c, labels) {
  const table = h("table", "tl-cmp tl-num");
  /** @type {(cells: (string | Node)[], head?: boolean) => HTMLElement} */
  const row = (cells, head) => h("tr", null, ...cells.map((x) => h(head ? "th" : "td", null, x)));
  const { a, b } = c;
  /** @type {(text: string, cls: string) => HTMLElement} */
  const cut = (text, cls) => {
    const n = h("span", `tl-cmp-name ${cls}`, text);
    n.title = visible(text); // the whole of a long name or id, cut with an ellipsis in the table
    return n;
  };
  /** @param {any} x */
  const name = (x) => h("span", "tl-cmp-cellcol", cut(x.name || "unnamed run", ""), x.run_id ? cut(x.run_id, "tl-meta") : null);
  /** @param {any} x */
  const total = (x) => x.input_tokens + x.output_tokens;
  table.append(
    row(["", labels[0], labels[1], "change"], true),
    row(["run", name(a), name(b), ""]),
    row(["outcome", outcomeWords(a.outcome, a.reason), outcomeWords(b.outcome, b.reason), ""]),
    row(["rounds", count(a.rounds), count(b.rounds), delta(b.rounds - a.rounds, count)]),
    row(["tokens", tokens(total(a)), tokens(total(b)), delta(c.tokens_delta, tokens)]),
    row(["cost", usd(a.cost_usd), usd(b.cost_usd), usdDelta(c.cost_delta_usd)]),
  );
  // the same figures a line a run, for a notebook too narrow for the table (CSS picks)
  /** @type {(label: string, x: any) => HTMLElement} */
  const line = (label, x) => h("div", null, h("span", "tl-strong", `${label}: `), `${x.name || "unnamed run"} · ${outcomeWords(x.outcome, x.reason)} · ${plural(x.rounds, "round")} · ${tokens(total(x))} tokens · ${usd(x.cost_usd)}`);
  const change = h("div", "tl-meta", `change: ${delta(b.rounds - a.rounds, count)} rounds · ${delta(c.tokens_delta, tokens)} tokens · ${usdDelta(c.cost_delta_usd)}`);
  return h("div", null, h("div", "tl-scroll-x tl-cmp-table", table), h("div", "tl-cmp-lines", line(labels[0], a), line(labels[1], b), change));
}

/**
 * The whole comparison: a head with its close button, both runs' totals, then the rounds.
 * @param {any} c
 * @param {ViewOptions} [options]
 * @returns {HTMLElement}
 */
export function comparisonView(c, options = {}) {
  const labels = [capitalized(c.a.label), capitalized(c.b.label)];
  const box = h("div", "tl-cmp-body");
  const title = c.kind === "fork" ? `The fork next to the original${c.from_round ? `, from round ${count(c.from_round)} on` : ""}` : `Comparing ${labels[0]} with ${labels[1]}`;
  const head = h("div", "tl-cmp-head", h("span", "tl-block-title", title), h("span", "tl-grow"));
  if (options.swap) head.append(button("Swap sides", "tl-cmp-swap", options.swap, `Compare again with ${labels[1]} first`));
  if (options.close) {
    const close = button("Close", "tl-cmp-close", options.close, "Close the comparison");
    close.setAttribute("aria-label", "Close the comparison");
    head.append(close);
  }
  const verdict = c.same ? "Every round did the same." : `${plural(c.differing, "round")} of ${count(c.rounds)} ${c.differing === 1 ? "differs" : "differ"}.`;
  box.append(head, totals(c, labels), h("div", "tl-cmp-verdict", dot(c.same ? "ok" : "warn"), h("span", null, verdict)));
  const rows = h("div", "tl-cmp-rows");
  const rest = h("div", "tl-cmp-rest");
  let next = 0;
  // a long comparison is drawn ROUNDS_AT_ONCE rounds that differ at a time (the page
  // stays small); the rest wait for "Show more"
  const more = () => {
    rest.textContent = "";
    let drawn = 0;
    while (next < c.rows.length && (drawn < ROUNDS_AT_ONCE || c.rows[next].same)) {
      const row = c.rows[next++];
      if (!row.same) drawn++;
      rows.insertBefore(row.same ? sameView(row, labels) : roundView(row, labels), rest);
    }
    const left = c.rows.slice(next).filter((/** @type {any} */ r) => !r.same).length;
    if (left) rest.append(button(`Show ${plural(Math.min(left, ROUNDS_AT_ONCE), "more round")} that ${left === 1 ? "differs" : "differ"} (${count(left)} left)`, "tl-more", more));
  };
  rows.append(rest);
  more();
  if (c.left_out) rows.append(h("div", "tl-note", `${plural(c.left_out, "more round")} not shown here: compare(...).frame() has every one.`));
  box.append(rows);
  return box;
}

/**
 * The comparison the widget holds, drawn above the run; redrawn only when it changes.
 * @param {ViewContext} ctx
 */
export function createCompare(ctx) {
  const { s, host } = ctx;
  const compareBox = h("section", "tl-cmpview");
  compareBox.setAttribute("role", "region");
  compareBox.setAttribute("aria-label", "Comparison of two runs");
  compareBox.hidden = true;
  /** @type {any} */
  let drawn;
  /** @type {any} */
  let drawnMsg;

  function close() {
    s.ui.cmpHidden = s.comparison; // at once; Python clears the comparison it keeps
    if (host.closeComparison) host.closeComparison();
    ctx.redraw(true);
  }

  function draw() {
    const c = s.comparison && s.comparison !== s.ui.cmpHidden ? s.comparison : null;
    const msg = s.ui.cmpMsg;
    if (c === drawn && msg === drawnMsg) return;
    drawn = c;
    drawnMsg = msg;
    compareBox.textContent = "";
    compareBox.hidden = !c && !msg;
    if (msg) compareBox.append(h("div", `tl-cmp-msg tl-edit-${msg.state === "error" ? "error" : "ok"}`, dot(msg.state === "error" ? "error" : "idle"), h("span", null, msg.text)));
    if (!c) return;
    const compare = host.compare;
    const swap = compare && c.runs_held && c.a.run_id && c.b.run_id ? () => compare(c.b.run_id, c.a.run_id) : null;
    compareBox.append(comparisonView(c, { close, swap }));
  }

  return { nodes: { compareBox }, draw };
}
