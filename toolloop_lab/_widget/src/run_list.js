// @ts-check
// The run list, shown as soon as the debugger kept two runs: one fixed-height row a run
// (virtualised, so a session of a thousand runs draws a dozen rows), the newest top-level
// run first and each nested run under the run that called it. Clicking a row shows that
// run (host.showRun); "Newest" follows the newest again; two ticked runs can be compared
// (host.compare, where the page offers it).

import { button, dot, h } from "./dom.js";
import { count, duration, plural, tokens, visible } from "./format.js";
import { checkMark } from "./checks.js";
import { calledBy, orderRuns, runDot, runName, runOutcome, runsTitle, startTime } from "./run_rows.js";
import { usd } from "./words.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {import("./run_rows.js").Entry} Entry */
/** @typedef {import("./run_rows.js").RunRow} RunRow */

const ROW_H = 28; // px, one row (fixed: the list is virtualised)
const VISIBLE = 8; // rows in view at most: the list never grows taller
const INDENT = 16; // px a nesting level

/**
 * How many runs are nested under each run of `entries` (a run's nested runs follow it in
 * the list, deeper than it).
 * @param {Entry[]} entries
 * @returns {Map<string, number>}
 */
function nestedCounts(entries) {
  /** @type {Map<string, number>} */
  const out = new Map();
  /** @type {Entry[]} */
  const open = [];
  for (const e of entries) {
    while (open.length && open[open.length - 1].depth >= e.depth) open.pop();
    for (const up of open) out.set(up.row.run_id, (out.get(up.row.run_id) || 0) + 1);
    open.push(e);
  }
  return out;
}

/**
 * The spend of a run with the runs nested under it, in words.
 * @param {RunRow} row
 * @param {number} nested
 * @returns {string}
 */
export function withNested(row, nested) {
  return `with ${plural(nested, "nested run")}: ${tokens(row.total_input_tokens + row.total_output_tokens)} tokens, ${usd(row.total_cost_usd)}`;
}

/**
 * @param {ViewContext} ctx
 */
export function createRuns(ctx) {
  const { s, host } = ctx;
  const title = h("span", "tl-runs-title");
  const note = h("span", "tl-meta");
  note.setAttribute("aria-live", "polite");
  const newest = button("Newest", null, () => host.showRun && host.showRun(null), "Show the newest run, and each new one as it starts");
  const compare = button("Compare", null, () => {
    if (host.compare && ticked.length === 2) host.compare(ticked[0], ticked[1]);
  }, "Compare the two runs ticked, round by round");
  const head = h("div", "tl-runs-head", title, note, h("span", "tl-grow"), newest, compare);
  const cols = h("div", "tl-run tl-runs-cols", h("span", null), h("span", null, "run"), h("span", null, "outcome"), h("span", "tl-r-num tl-r-rounds", "rounds"), h("span", "tl-r-num tl-r-tok", "tokens"), h("span", "tl-r-num", "cost"), h("span", "tl-r-num tl-r-dur", "duration"), h("span", "tl-r-start", "started"));
  cols.setAttribute("aria-hidden", "true");
  const spacer = h("div", "tl-spacer");
  const scroller = h("div", "tl-scroller tl-runs-scroller", spacer);
  scroller.tabIndex = 0;
  scroller.setAttribute("role", "listbox");
  scroller.setAttribute("aria-label", "Runs");
  const box = h("section", "tl-runs", head, cols, scroller);
  box.setAttribute("aria-label", "Runs this debugger kept");

  /** @type {Entry[]} */
  let entries = [];
  /** @type {Map<string, number>} */
  let nested = new Map();
  let entriesV = -1;
  let rowsKey = "";
  /** @type {RunRow[]} the rows drawn, in order */
  let drawn = [];
  let cursor = -1;
  let top = 0; // the list's scroll offset, kept by its scroll listener: no layout read while drawing
  /** @type {string[]} run ids ticked for Compare, the first ticked first */
  let ticked = [];

  /** @param {string} id */
  function show(id) {
    // a click on the run shown while following the newest pins it
    if (host.showRun && (id !== s.run.runId || s.runsPinned !== id)) host.showRun(id);
  }

  /** @param {string} id */
  function tick(id) {
    ticked = ticked.includes(id) ? ticked.filter((t) => t !== id) : [...ticked, id].slice(-2);
    ctx.redraw(true);
  }

  scroller.addEventListener("scroll", () => {
    top = scroller.scrollTop;
    drawRows();
  });
  scroller.addEventListener("click", (ev) => {
    const target = /** @type {HTMLElement | null} */ (ev.target);
    const row = target && target.closest ? /** @type {HTMLElement | null} */ (target.closest(".tl-run")) : null;
    if (!row || !row.dataset.run) return;
    if (target && target.tagName === "INPUT") tick(row.dataset.run);
    else show(row.dataset.run);
  });
  scroller.addEventListener("keydown", (ev) => {
    const n = entries.length;
    if (!n) return;
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      ev.preventDefault();
      cursor = Math.min(n - 1, Math.max(0, cursor + (ev.key === "ArrowDown" ? 1 : -1)));
      const at = cursor * ROW_H;
      if (at < top || at >= top + ROW_H * VISIBLE) scroller.scrollTop = top = Math.max(0, at - ROW_H * 2);
      rowsKey = "";
      drawRows();
    } else if ((ev.key === "Enter" || ev.key === " ") && cursor >= 0 && cursor < n) {
      ev.preventDefault();
      const id = entries[cursor].row.run_id;
      if (ev.key === "Enter") show(id);
      else if (host.compare) tick(id);
    }
  });

  function draw() {
    const many = s.runs.size >= 2;
    box.hidden = !many;
    if (!many) return;
    if (entriesV !== s.runsVersion) {
      entriesV = s.runsVersion;
      entries = orderRuns(s.runs, s.runsLeftOut);
      nested = nestedCounts(entries);
      ticked = ticked.filter((id) => s.runs.has(id));
    }
    title.textContent = runsTitle(s.runs.size, s.runsLeftOut);
    note.textContent = visible(s.runsNote || "") || (host.compare ? (ticked.length === 1 ? "tick one more run to compare" : "") : "");
    newest.hidden = !host.showRun;
    newest.disabled = s.runsPinned === null;
    newest.setAttribute("aria-pressed", String(s.runsPinned === null));
    newest.title = s.runsPinned === null ? "Showing the newest run, and each new one as it starts" : "Show the newest run, and each new one as it starts";
    compare.hidden = !host.compare;
    box.classList.toggle("tl-ticks", !!host.compare);
    compare.disabled = ticked.length !== 2;
    scroller.style.height = `${ROW_H * Math.min(VISIBLE, entries.length)}px`;
    spacer.style.height = `${ROW_H * entries.length}px`;
    drawRows();
  }

  function drawRows() {
    const n = entries.length;
    const first = Math.max(0, Math.min(Math.floor(top / ROW_H), n - VISIBLE) - 2);
    const last = Math.min(n, first + VISIBLE + 4);
    const shownId = s.run.runId;
    const key = `${first}:${last}:${shownId}:${s.runsPinned}:${ticked.join(",")}:${cursor}:${!!host.compare}`;
    if (key === rowsKey && drawn.length === last - first && spacer.children.length === drawn.length) {
      // the same rows in the same places: redraw only the rows that changed (a new row object)
      for (let i = first; i < last; i++) {
        if (drawn[i - first] === entries[i].row) continue;
        drawn[i - first] = entries[i].row;
        spacer.children[i - first].replaceWith(rowFor(entries[i], i, shownId));
      }
      return;
    }
    rowsKey = key;
    drawn = entries.slice(first, last).map((e) => e.row);
    const frag = document.createDocumentFragment();
    for (let i = first; i < last; i++) frag.append(rowFor(entries[i], i, shownId));
    spacer.replaceChildren(frag);
  }

  /**
   * @param {Entry} entry
   * @param {number} i its place in the list
   * @param {string | null} shownId the run on screen
   * @returns {HTMLElement}
   */
  function rowFor(entry, i, shownId) {
    const row = entry.row;
    const id = row.run_id;
    const isShown = id === shownId;
    const el = h("div", "tl-run" + (isShown ? " tl-selected" : "") + (i === cursor ? " tl-cursor" : "") + (host.showRun ? " tl-clickable" : ""));
    el.dataset.run = id;
    el.style.top = `${i * ROW_H}px`;
    el.setAttribute("role", "option");
    el.setAttribute("aria-selected", String(isShown));
    const box = h("span", "tl-r-tick");
    if (host.compare) {
      const check = h("input", null);
      check.type = "checkbox";
      check.checked = ticked.includes(id);
      check.setAttribute("aria-label", visible(`Compare ${runName(entry)}`));
      box.append(check);
    }
    const name = h("span", "tl-r-name");
    name.style.paddingLeft = `${entry.depth * INDENT}px`;
    if (entry.depth) name.append(h("span", "tl-meta", "↳ "));
    name.append(h("span", "tl-r-label", runName(entry)));
    const by = calledBy(entry);
    if (by) name.append(h("span", "tl-meta tl-r-by", by));
    if (isShown) {
      const chip = h("span", "tl-chip tl-r-shown", s.runsPinned === id ? "pinned" : "shown");
      chip.title = s.runsPinned === id ? "Shown, and kept on screen while other runs start" : "Shown: the newest run";
      name.append(chip);
    }
    const cost = h("span", "tl-r-num", usd(row.cost_usd));
    const under = nested.get(id) || 0;
    if (under) cost.title = `this run alone; ${withNested(row, under)}`;
    const start = h("span", "tl-r-start tl-num", startTime(row.started_at));
    if (row.started_at) start.title = visible(String(row.started_at));
    const tok = h("span", "tl-r-num tl-r-tok", tokens(row.input_tokens + row.output_tokens));
    tok.title = `${tokens(row.input_tokens)} in · ${tokens(row.output_tokens)} out`;
    const outcome = h("span", "tl-r-outcome", dot(runDot(row)), h("span", null, runOutcome(row)));
    const mark = checkMark(row);
    if (mark) outcome.append(mark);
    el.append(
      box,
      name,
      outcome,
      h("span", "tl-r-num tl-r-rounds", count(row.rounds)),
      tok,
      cost,
      h("span", "tl-r-num tl-r-dur", duration(row.duration_s)),
      start,
    );
    el.title = visible([runName(entry), by, row.tags.length ? `tags: ${row.tags.join(", ")}` : ""].filter(Boolean).join(" · "));
    return el;
  }

  return {
    nodes: { runs: box },
    draw,
    forget() {
      rowsKey = "";
    },
  };
}
