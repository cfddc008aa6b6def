// @ts-check
// The timeline: a toolbar (errors only, a tool, a search, go to a round) over a virtualised
// list of rounds, one fixed-height row each (timeline_rows.js), following the newest unless
// scrolled away. The list is as tall as its rows, up to TIMELINE_ROWS (then it scrolls).

import { button, dropdown, h } from "./dom.js";
import { count, plural } from "./format.js";
import { KEY_ARIA, KEY_HINT, keyMove, seek } from "./keys.js";
import { isErrorRound, matches, selectedRound } from "./rounds.js";
import { stamp } from "./store.js";
import { ROW_H, createRows } from "./timeline_rows.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {import("./run.js").Round} Round */

const TIMELINE_ROWS = 9; // the most rows shown at once; a longer list scrolls

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
  const rows = createRows(ctx, spacer, timeline, (i) => roundAt(i));

  /** @type {number[] | null} indices of matching rounds, or null for all */
  let filtered = null;
  let filterKey = "";
  let rowsKey = "";
  let lastTop = 0;
  let programmatic = false;
  /** @type {number | null} where drawRows wants the list scrolled (done by scroll()) */
  let scrollTo = null;
  let userScrolled = false;

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
    prepare(); // the list's rounds are the run's now, not those of a run shown before
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
    prepare(); // a run switch since the last draw: the list holds the new run's rounds
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
    prepare(); // a run switch since the last draw: the keys move through the new run's rounds
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
    rows.draw(first, last, sel);
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
      rows.drop();
    },
    dispose() {
      clearTimeout(searchTimer);
    },
  };
}
