// @ts-check
// The timeline: a toolbar (errors only, a tool, a search, go to a round) over a virtualised
// list of rounds, one fixed-height row each, following the newest unless scrolled away. The
// list is as tall as its rows, up to TIMELINE_ROWS (then it scrolls). The figures (number,
// tokens, cost) get columns as wide as the widest figure drawn so far: at a narrow width
// the reply's preview shrinks and the chips that do not fit go out of sight, never them.

import { button, dot, dropdown, h } from "./dom.js";
import { count, duration, plural, tokens } from "./format.js";
import { trippedGates } from "./budget.js";
import { isDone } from "./run.js";
import { KEY_ARIA, KEY_HINT, keyMove, seek } from "./keys.js";
import { isErrorRound, matches, roundCost, roundLabel, roundState, roundTime, selectedRound, toolDot, toolSaid } from "./rounds.js";
import { held, runNow, stamp } from "./store.js";
import { ROUND_STATE, usd } from "./words.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {import("./run.js").Round} Round */

const ROW_H = 30; // px, one timeline row (fixed: the list is virtualised)
const TIMELINE_ROWS = 9; // the most rows shown at once; a longer list scrolls

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
 * @param {ViewContext} ctx
 */
export function createTimeline(ctx) {
  const s = ctx.s;
  const fErrors = dropdown(
    [
      ["all", "all rounds"],
      ["errors", "errors only"],
    ],
    "Which rounds",
  );
  const fTool = dropdown([], "Tool");
  const fSearch = h("input", "tl-input");
  fSearch.type = "search";
  fSearch.placeholder = "Search";
  fSearch.setAttribute("aria-label", "Search");
  const jump = h("input", "tl-input tl-jump");
  jump.type = "number";
  jump.min = "1";
  jump.placeholder = "round";
  jump.setAttribute("aria-label", "Round number");
  const jumpBtn = button("Go", null, () => goTo(Number(jump.value)), "Show this round");
  jump.addEventListener("keydown", (ev) => ev.key === "Enter" && goTo(Number(jump.value)));
  const countBox = h("span", "tl-meta");
  const toolbar = h("div", "tl-toolbar", fErrors, fTool, fSearch, h("span", "tl-jumpbox", jump, jumpBtn), countBox);
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let searchTimer;
  fErrors.addEventListener("change", () => {
    s.ui.filter = fErrors.value;
    ctx.redraw(true);
  });
  fTool.addEventListener("change", () => {
    s.ui.tool = fTool.value;
    ctx.redraw(true);
  });
  fSearch.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      s.ui.search = fSearch.value.trim().toLowerCase();
      ctx.redraw(true);
    }, 150);
  });

  const colHead = h("div", "tl-row tl-colhead", h("span", "tl-c-n", "#"), h("span", "tl-c-state", h("span", null, "status")), h("span", "tl-c-sum", h("span", "tl-sum-text", "reply", h("span", "tl-wide", " and tools"))), h("span", "tl-c-tok tl-num", "tokens", h("span", "tl-wide", " in / out")), h("span", "tl-c-cost tl-num", "cost"), h("span", "tl-c-dur tl-num", "duration"));
  colHead.setAttribute("aria-hidden", "true");
  const scroller = h("div", "tl-scroller");
  scroller.tabIndex = 0;
  scroller.setAttribute("role", "listbox");
  scroller.setAttribute("aria-label", "Rounds");
  scroller.style.height = `${ROW_H}px`;
  const spacer = h("div", "tl-spacer");
  scroller.append(spacer);
  const empty = h("div", "tl-empty tl-muted", "No rounds yet.");
  const timeline = h("div", "tl-timeline", colHead, scroller, empty);

  /** @type {number[] | null} indices of matching rounds, or null for all */
  let filtered = null;
  let filterKey = "";
  let rowsKey = "";
  let lastTop = 0;
  let programmatic = false;
  /** @type {number | null} where drawRows wants the list scrolled (done by scroll()) */
  let scrollTo = null;
  let userScrolled = false;
  /** @typedef {{i: number, el: HTMLElement, sig: string, live: import("./context.js").TextTimer | null}} Shown */
  /** @type {Shown[]} the rows in the spacer, in list order (their places follow each other) */
  let shown = [];
  /** the widest figure drawn so far, in ch, per column (reset when the run starts again) */
  let widest = { n: 0, tok: 0, tok2: 0, cost: 0, rounds: 0 };

  const listLength = () => (filtered ? filtered.length : s.run.rounds.length);
  /** @param {number} i */
  const roundAt = (i) => (filtered ? s.run.rounds[filtered[i]] : s.run.rounds[i]);

  /** @param {number} n a round's number as shown */
  function goTo(n) {
    const r = s.run.byNumber.get(n - (s.offset || 0));
    if (!r) {
      countBox.textContent = `no round ${isFinite(n) ? n : ""}`;
      return;
    }
    select(r, true);
  }

  /**
   * @param {Round} r
   * @param {boolean} scroll bring it into view (clearing a filter that hides it)
   */
  function select(r, scroll) {
    s.ui.selected = r.n;
    s.ui.follow = false;
    if (scroll) {
      let i = filtered ? filtered.indexOf(r.index) : r.index;
      if (i < 0) {
        s.ui.filter = "all";
        s.ui.tool = "";
        s.ui.search = "";
        fErrors.value = "all";
        fTool.value = "";
        fSearch.value = "";
        filtered = null;
        filterKey = "";
        i = r.index;
      }
      const top = i * ROW_H;
      if (top < lastTop || top > lastTop + ROW_H * (TIMELINE_ROWS - 1)) {
        lastTop = Math.max(0, top - ROW_H * 2);
        userScrolled = true;
        scroller.scrollTop = lastTop;
      }
    }
    ctx.redraw(true);
  }

  scroller.addEventListener("scroll", () => {
    const top = scroller.scrollTop;
    if (programmatic) {
      programmatic = false;
      if (top === lastTop) return;
    }
    userScrolled = top + ROW_H * TIMELINE_ROWS < listLength() * ROW_H - ROW_H;
    lastTop = top;
    drawRows();
    scroll();
  });
  scroller.addEventListener("click", (ev) => {
    const target = /** @type {Element | null} */ (ev.target);
    const row = target && target.closest ? /** @type {HTMLElement | null} */ (target.closest(".tl-row")) : null;
    if (!row || !row.dataset.n) return;
    const r = s.run.byNumber.get(Number(row.dataset.n));
    if (r) select(r, false);
  });
  scroller.title = KEY_HINT;
  scroller.setAttribute("aria-keyshortcuts", KEY_ARIA);
  scroller.addEventListener("keydown", (ev) => {
    const n = listLength();
    const move = keyMove(ev, s.ui.selected === null ? n - 1 : indexOfSelected(), n, TIMELINE_ROWS - 1);
    if (!move) return;
    // ours: the notebook must not also move its cell selection
    ev.preventDefault();
    ev.stopPropagation();
    if (!n) return;
    if (move.kind === "go") return select(roundAt(move.index), true);
    const cur = indexOfSelected();
    const i = seek(cur, move.step, n, (j) => isErrorRound(s, roundAt(j)));
    if (i >= 0) select(roundAt(i), true);
    else countBox.textContent = move.step > 0 ? "no error after this round" : "no error before this round";
  });
  function indexOfSelected() {
    const r = s.ui.selected === null ? undefined : s.run.byNumber.get(s.ui.selected);
    if (!r) return listLength() - 1;
    const i = filtered ? filtered.indexOf(r.index) : r.index;
    return i < 0 ? listLength() - 1 : i;
  }

  /**
   * Which rounds the list holds (no DOM): true when a filter is on.
   * @returns {boolean}
   */
  function prepare() {
    const rounds = s.run.rounds;
    const active = !!(s.ui.filter !== "all" || s.ui.tool || s.ui.search);
    if (!active) filtered = null;
    else {
      const k = `${s.ui.filter}|${s.ui.tool}|${s.ui.search}|${stamp(s)}`;
      if (k !== filterKey) {
        filterKey = k;
        filtered = [];
        for (let i = 0; i < rounds.length; i++) if (matches(s, rounds[i])) filtered.push(i);
      }
    }
    return active;
  }

  function drawFilter() {
    const names = [...s.run.toolNames].sort();
    const key = names.join("\u0000");
    if (fTool.dataset.key !== key) {
      fTool.dataset.key = key;
      const cur = s.ui.tool;
      fTool.textContent = "";
      const all = h("option", null, "all tools");
      all.value = "";
      fTool.append(all);
      for (const n of names) {
        const o = h("option", null, n);
        o.value = n;
        fTool.append(o);
      }
      fTool.value = names.includes(cur) ? cur : "";
    }
    fErrors.value = s.ui.filter;
    const rounds = s.run.rounds;
    const active = prepare();
    const n = listLength();
    // a saved run lists the rounds its file kept: say of how many
    const all = rounds.length ? (s.omitted ? `${count(rounds.length)} of ${plural(rounds.length + s.omitted, "round")} (the newest, kept in this file)` : plural(rounds.length, "round")) : "";
    countBox.textContent = active ? `${plural(n, "round")} of ${count(rounds.length)}${s.omitted ? " kept" : ""}` : all;
    empty.hidden = n > 0;
    empty.textContent = rounds.length ? "No round matches." : "No rounds yet.";
  }

  function drawRows() {
    const n = listLength();
    scroller.style.height = `${ROW_H * Math.max(1, Math.min(TIMELINE_ROWS, n))}px`; // as tall as its rows
    spacer.style.height = `${n * ROW_H}px`;
    let top = lastTop;
    if (s.ui.follow && !userScrolled) {
      top = Math.max(0, n * ROW_H - ROW_H * TIMELINE_ROWS);
      if (top !== lastTop) scrollTo = top;
    }
    lastTop = top;
    const first = Math.max(0, Math.floor(top / ROW_H) - 2);
    const last = Math.min(n, first + TIMELINE_ROWS + 4);
    const sel = selectedRound(s);
    const key = `${first}:${last}:${n}:${stamp(s)}:${sel ? sel.n : ""}`;
    if (key === rowsKey) return;
    rowsKey = key;
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
    return `${r.n}|${r.v}|${roundState(s, r)}|${sel === r}|${isDone(s.run)}|${r.call ? held(s, r.call) : ""}|${s.offset || 0}`;
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
        chip.title = toolSaid(t);
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

  /** Follow the newest: scroll where drawRows said (scrolling makes the page lay itself
   * out there and then: done first in a draw, when only the list has changed, whose box
   * is laid out on its own, `contain: strict`). */
  function scroll() {
    if (scrollTo === null) return;
    const top = scrollTo;
    scrollTo = null;
    programmatic = true;
    scroller.scrollTop = top;
  }

  return {
    nodes: { toolbar, timeline },
    prepare,
    drawFilter,
    drawRows,
    scroll,
    /** @param {Round} r show it, the list scrolled to it (a click in the whole-run timeline) */
    open(r) {
      select(r, true);
    },
    forget() {
      rowsKey = "";
      drop();
    },
    dispose() {
      clearTimeout(searchTimer);
    },
  };
}
