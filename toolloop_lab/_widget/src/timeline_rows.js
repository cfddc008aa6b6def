// @ts-check
// The round list's rows: one fixed-height row a round (its number, state, reply and tool
// chips, tokens, cost, time), kept while its round does not change. The figures (number,
// tokens, cost) get columns as wide as the widest figure drawn so far: at a narrow width
// the reply's preview shrinks and the chips that do not fit go out of sight, never them.

import { dot, h } from "./dom.js";
import { duration, tokens, visible } from "./format.js";
import { trippedGates } from "./budget.js";
import { failuresAt, roundCheckMark } from "./checks.js";
import { isDone } from "./run.js";
import { roundCost, roundLabel, roundState, roundTime, toolDot, toolSaid } from "./rounds.js";
import { held, runNow } from "./store.js";
import { ROUND_STATE, usd } from "./words.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {import("./run.js").Round} Round */
/** @typedef {{i: number, el: HTMLElement, sig: string, live: import("./context.js").TextTimer | null}} Shown */

export const ROW_H = 30; // px, one timeline row (fixed: the list is virtualised)

/**
 * About how many `ch` (the width of a digit, which tabular figures all share) `text` takes:
 * a dash or an m counts more, so a column sized by it never clips its figure.
 * @param {string} text
 * @returns {number}
 */
export function textCh(text) {
  let n = 0;
  for (const c of text) n += c === "—" ? 1.7 : c === "m" || c === "w" || c === "M" || c === "W" ? 1.6 : 1;
  return n;
}

/**
 * The rows of a round list drawn into `spacer`; `roundAt(i)` is the round at list place `i`.
 * @param {ViewContext} ctx
 * @param {HTMLElement} spacer
 * @param {HTMLElement} timeline where the columns' widths are set
 * @param {(i: number) => Round} roundAt
 */
export function createRows(ctx, spacer, timeline, roundAt) {
  const s = ctx.s;
  /** @type {Shown[]} the rows in the spacer, in list order (their places follow each other) */
  let shown = [];
  /** the widest figure drawn so far, in ch, per column (reset when the run starts again) */
  let widest = { n: 0, tok: 0, tok2: 0, cost: 0, rounds: 0 };

  /**
   * Draw the rows of list places `first` to `last` (not included), the columns' widths
   * following the widest figure drawn.
   * @param {number} first
   * @param {number} last
   * @param {Round | null} sel
   */
  function draw(first, last, sel) {
    ctx.liveRows = [];
    if (s.run.rounds.length < widest.rounds) {
      widest = { n: 0, tok: 0, tok2: 0, cost: 0, rounds: 0 };
      drop(); // every row counts its figures again
    }
    widest.rounds = s.run.rounds.length;
    const was = JSON.stringify(widest);
    placeRows(first, last, sel);
    if (JSON.stringify(widest) !== was) {
      for (const col of /** @type {const} */ (["n", "tok", "tok2", "cost"])) timeline.style.setProperty(`--tl-${col}-ch`, String(widest[col]));
    }
  }

  /**
   * Put the rows of list places `first` to `last` (not included) in the spacer, in order.
   * A row already there whose round has not changed stays as it is: following the newest,
   * a draw adds the new round's row and removes the one that scrolled away, and the page
   * styles and lays out those two, not the dozen in view.
   * @param {number} first
   * @param {number} last
   * @param {Round | null} sel
   */
  function placeRows(first, last, sel) {
    if (shown.length && (shown[0].i >= last || shown[shown.length - 1].i < first)) drop();
    while (shown.length && shown[0].i < first) /** @type {Shown} */ (shown.shift()).el.remove();
    while (shown.length && shown[shown.length - 1].i >= last) /** @type {Shown} */ (shown.pop()).el.remove();
    const lo = shown.length ? shown[0].i : last;
    const hi = shown.length ? shown[shown.length - 1].i + 1 : last;
    /** @type {Shown[]} */
    const before = [];
    for (let i = first; i < lo; i++) before.push(made(i, sel));
    for (const row of shown) {
      const sig = signature(roundAt(row.i), sel);
      if (sig !== row.sig) {
        const fresh = made(row.i, sel);
        row.el.replaceWith(fresh.el);
        Object.assign(row, fresh);
      } else if (row.live) ctx.liveRows.push(row.live);
    }
    /** @type {Shown[]} */
    const after = [];
    for (let i = hi; i < last; i++) after.push(made(i, sel));
    if (before.length) spacer.prepend(...before.map((r) => r.el));
    if (after.length) spacer.append(...after.map((r) => r.el));
    shown = [...before, ...shown, ...after];
  }

  /** Forget the rows drawn: the next draw makes each again. */
  function drop() {
    shown = [];
    spacer.replaceChildren();
  }

  /**
   * What a round's row shows depends on: the round (its changes counted by `v`), its state,
   * whether it is selected, and the run's (done, a pause holding its call, the numbering).
   * @param {Round} r
   * @param {Round | null} sel
   * @returns {string}
   */
  function signature(r, sel) {
    return `${r.n}|${r.v}|${roundState(s, r)}|${sel === r}|${isDone(s.run)}|${r.call ? held(s, r.call) : ""}|${s.offset || 0}|${failuresAt(s, r.n).length}`;
  }

  /**
   * The row of list place `i`, with what says when it must be made again.
   * @param {number} i
   * @param {Round | null} sel
   * @returns {Shown}
   */
  function made(i, sel) {
    const r = roundAt(i);
    const live = ctx.liveRows.length;
    const el = rowFor(r, i, sel);
    return { i, el, sig: signature(r, sel), live: ctx.liveRows.length > live ? ctx.liveRows[ctx.liveRows.length - 1] : null };
  }

  /**
   * Count `text` for the width of column `col`.
   * @param {"n" | "tok" | "tok2" | "cost"} col
   * @param {string} text
   * @returns {string}
   */
  function counted(col, text) {
    widest[col] = Math.max(widest[col], Math.ceil(textCh(text) * 10) / 10);
    return text;
  }

  /**
   * The tokens in and out, on one line (on two in a very narrow list).
   * @param {{input: number, output: number} | null | undefined} u
   * @returns {HTMLElement}
   */
  function tokensCell(u) {
    const cell = h("span", "tl-c-tok tl-num");
    if (!u) {
      cell.textContent = counted("tok", "—");
      counted("tok2", "—");
      return cell;
    }
    const [tin, tout] = [tokens(u.input), tokens(u.output)];
    counted("tok", `${tin} / ${tout}`);
    counted("tok2", tin.length > tout.length ? tin : tout);
    cell.append(h("span", null, tin), h("span", "tl-tok-sep", " / "), h("span", null, tout));
    return cell;
  }

  /**
   * @param {Round} r
   * @param {number} i its place in the list
   * @param {Round | null} sel
   * @returns {HTMLElement}
   */
  function rowFor(r, i, sel) {
    const st = roundState(s, r);
    const row = h("div", `tl-row tl-st-${st}` + (sel === r ? " tl-selected" : ""));
    row.dataset.n = String(r.n);
    row.style.top = `${i * ROW_H}px`;
    row.setAttribute("role", "option");
    row.setAttribute("aria-selected", String(sel === r));
    const c = r.call;
    const sum = h("span", "tl-c-sum");
    const chips = h("span", "tl-sum-chips");
    if (!c && !isDone(s.run)) sum.append(h("span", "tl-muted", st === "paused" ? "paused before the model call" : "about to call the model"));
    if (c) {
      const text = c.text || "";
      if (text) sum.append(h("span", "tl-sum-text", text.slice(0, 160)));
      else if (c.done) sum.append(h("span", "tl-muted", "(no text)"));
      else if (c.interrupted) sum.append(h("span", "tl-muted", c.interrupted === "cancelled" ? "no reply: stopped" : "no reply: the run failed"));
      else sum.append(h("span", "tl-muted", held(s, c) ? "paused before the call" : "waiting for the reply"));
    }
    if (r.tools.length) {
      const tl = h("span", "tl-sum-tools");
      for (const t of r.tools.slice(0, 6)) {
        const chip = h("span", `tl-chip tl-chip-${t.status}`, dot(toolDot(t)), h("span", "tl-chip-name", t.name));
        chip.title = visible(toolSaid(t));
        tl.append(chip);
      }
      if (r.tools.length > 6) tl.append(h("span", "tl-meta", `+${r.tools.length - 6}`));
      chips.append(tl);
    }
    const net = r.tools.reduce((a, t) => a + (t.pruned ? t.pruned.net : 0), 0);
    if (r.tools.some((t) => t.pruned)) chips.append(h("span", "tl-chip", net < 0 ? `pruning lost ${tokens(-net)}` : `pruned −${tokens(net)}`));
    for (const said of trippedGates(r)) {
      const chip = h("span", "tl-chip tl-chip-gate", dot("warn"), said); // where a budget did its job
      chip.title = `${said} in this round: its gate tripped here`;
      chips.append(chip);
    }
    const checked = roundCheckMark(s, r.n); // a failed check's evidence names this round
    if (checked) chips.append(checked);
    if (r.interventions.length) chips.append(h("span", "tl-chip tl-chip-hand", dot("warn"), "changed by you"));
    if (r.pauses.length) chips.append(h("span", "tl-chip tl-chip-paused", dot("paused"), `paused ${duration(r.paused)}`));
    if (chips.childNodes.length) sum.append(chips);
    const u = c && c.usage;
    const dur = h("span", "tl-c-dur tl-num");
    // the round's own time: what a pause held it is its own segment, never part of it
    if (st === "running") {
      const fn = () => duration(runNow(s) - (r.t0 || 0) - r.paused);
      dur.textContent = fn();
      ctx.liveRows.push([dur, fn]);
    } else dur.textContent = r.t0 === null || (!c && !r.tools.length) ? "—" : duration(roundTime(s, r));
    const state = h("span", "tl-c-state", dot(st), h("span", null, ROUND_STATE[st]));
    state.title = ROUND_STATE[st]; // a narrow list shows the dot only
    row.append(
      h("span", "tl-c-n tl-num", counted("n", roundLabel(s, r))),
      state,
      sum,
      tokensCell(u),
      h("span", "tl-c-cost tl-num", counted("cost", u ? usd(roundCost(r)) : "—")),
      dur,
    );
    return row;
  }

  return { draw, drop };
}
