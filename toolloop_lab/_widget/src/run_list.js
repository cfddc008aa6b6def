// @ts-check
// The run list, shown as soon as the debugger kept two runs. Its header counts the runs per
// outcome and those whose tools failed (a click on a count shows only those runs); a search
// (name, tag, question or id) and a sort (started, cost, tokens, rounds, duration) find a run
// among thousands. One fixed-height row a run, drawn only where the list scrolled to
// (virtualised: ten thousand runs draw a dozen rows), the newest top-level run first and
// each nested run under the run that called it while nothing is filtered or sorted.
// Clicking a row (or Enter on it) shows that run (host.showRun); "Newest" follows the newest
// again; two ticked runs (Space) can be compared (host.compare, where the page offers it).
// Keys, while the list has the focus: the arrows, PageUp, PageDown, Home and End move.

import { button, dot, h } from "./dom.js";
import { count, duration, plural, tokens, visible } from "./format.js";
import { checkMark } from "./checks.js";
import { runMarks } from "./run_marks.js";
import { SORTS, SORT_WORDS, countRuns, defaultQuery, isDefault, outcomeKeyWords, queryRuns } from "./run_query.js";
import { calledBy, orderRuns, runDot, runName, runOutcome, runsTitle, startTime } from "./run_rows.js";
import { usd } from "./words.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {import("./run_rows.js").Entry} Entry */
/** @typedef {import("./run_rows.js").RunRow} RunRow */
/** @typedef {import("./run_query.js").RunQuery} RunQuery */

const ROW_H = 28; // px, one row (fixed: the list is virtualised)
const VISIBLE = 8; // rows in view at most: the list never grows taller
const INDENT = 16; // px a nesting level
const OVERSCAN = 2; // rows drawn above and below the view (a scroll shows no gap)

/**
 * The status a count's dot is drawn for: the runs it counts ended (or stand) that way.
 * @param {string} outcome a key of run_query.outcomeKey
 * @returns {string}
 */
function countStatus(outcome) {
  return outcome === "running" || outcome === "idle" || outcome === "failed" || outcome === "cancelled" ? outcome : "finished";
}

/**
 * Whether two lists of lines hold the same runs in the same places at the same depths.
 * @param {Entry[]} a
 * @param {Entry[]} b
 * @returns {boolean}
 */
function sameOrder(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i].row.run_id !== b[i].row.run_id || a[i].depth !== b[i].depth) return false;
  return true;
}

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
  /** @type {RunQuery} */
  const q = s.ui.runs || (s.ui.runs = defaultQuery());
  const title = h("span", "tl-runs-title");
  const note = h("span", "tl-meta");
  note.setAttribute("aria-live", "polite");
  const newest = button("Newest", null, () => host.showRun && host.showRun(null), "Show the newest run, and each new one as it starts");
  const compare = button("Compare", null, () => {
    if (host.compare && ticked.length === 2) host.compare(ticked[0], ticked[1]);
  }, "Compare the two runs ticked, round by round");
  const head = h("div", "tl-runs-head", title, note, h("span", "tl-grow"), newest, compare);

  // the counts: one toggle a outcome, and one for runs whose tools failed
  const counts = h("div", "tl-runs-counts");
  counts.setAttribute("role", "group");
  counts.setAttribute("aria-label", "Runs by outcome: click one to show only those runs");
  counts.addEventListener("click", (ev) => {
    const target = /** @type {HTMLElement | null} */ (ev.target);
    const b = target && target.closest ? /** @type {HTMLElement | null} */ (target.closest("button")) : null;
    if (!b || !b.dataset.count) return;
    if (b.dataset.count === "tool_errors") q.toolErrors = !q.toolErrors;
    else q.outcome = q.outcome === b.dataset.count ? null : b.dataset.count;
    refresh(true);
  });

  // the search, the sort and how many are shown
  const search = /** @type {HTMLInputElement} */ (h("input", "tl-input tl-runs-search"));
  search.type = "search";
  search.placeholder = "name, tag or question";
  search.setAttribute("aria-label", "Find runs by name, tag, question or id");
  search.addEventListener("input", () => {
    q.text = search.value;
    refresh(true);
  });
  const sort = /** @type {HTMLSelectElement} */ (h("select", "tl-select tl-runs-sort"));
  sort.setAttribute("aria-label", "Sort the runs by");
  for (const key of SORTS) {
    const o = /** @type {HTMLOptionElement} */ (h("option", null, `sort by ${SORT_WORDS[key]}`));
    o.value = key;
    sort.append(o);
  }
  sort.addEventListener("change", () => {
    q.sort = sort.value;
    q.desc = true;
    refresh(true);
  });
  const order = button("", "tl-runs-order", () => {
    q.desc = !q.desc;
    refresh(true);
  });
  const clear = button("Show every run", "tl-runs-clear", () => {
    Object.assign(q, defaultQuery());
    search.value = "";
    refresh(true);
  }, "Clear the filters and sort by start, the newest first");
  const shownCount = h("span", "tl-meta tl-runs-shown tl-num");
  shownCount.setAttribute("aria-live", "polite");
  const tools = h("div", "tl-runs-tools", search, sort, order, clear, shownCount);

  const cols = h("div", "tl-run tl-runs-cols", h("span", null), h("span", null, "run"), h("span", null, "outcome"), h("span", "tl-r-num tl-r-rounds", "rounds"), h("span", "tl-r-num tl-r-tok", "tokens"), h("span", "tl-r-num", "cost"), h("span", "tl-r-num tl-r-dur", "duration"), h("span", "tl-r-start", "started"));
  cols.setAttribute("aria-hidden", "true");
  const spacer = h("div", "tl-spacer");
  const scroller = h("div", "tl-scroller tl-runs-scroller", spacer);
  scroller.tabIndex = 0;
  scroller.setAttribute("role", "listbox");
  scroller.setAttribute("aria-label", "Runs (arrows, Page Up, Page Down, Home and End move; Enter shows the run; Space ticks it to compare)");
  const empty = h("div", "tl-muted tl-runs-empty", "No run matches: “Show every run” lists them all again.");
  const box = h("section", "tl-runs", head, counts, tools, cols, scroller, empty);
  box.setAttribute("aria-label", "Runs this debugger kept");

  /** @type {Entry[]} */
  let entries = [];
  let flat = false;
  /** @type {Map<string, number>} */
  let nested = new Map();
  let entriesKey = "";
  let orderV = 0; // grows when the lines' order (or their number) changed
  /** @type {Entry[]} */
  let tree = [];
  let treeV = -1;
  let countsKey = "";
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
    rowsKey = "";
    draw();
  }

  /**
   * The query changed: the list starts at its top again and draws now (not a frame later:
   * a click on a count or a sort is answered in the same task).
   * @param {boolean} toTop
   */
  function refresh(toTop) {
    if (toTop) {
      cursor = -1;
      top = 0;
      scroller.scrollTop = 0;
    }
    draw();
  }

  scroller.addEventListener("scroll", () => {
    top = scroller.scrollTop;
    drawRows();
  });
  scroller.addEventListener("click", (ev) => {
    const target = /** @type {HTMLElement | null} */ (ev.target);
    const row = target && target.closest ? /** @type {HTMLElement | null} */ (target.closest(".tl-run")) : null;
    if (!row || !row.dataset.run) return;
    cursor = Number(row.dataset.at);
    if (target && target.tagName === "INPUT") tick(row.dataset.run);
    else show(row.dataset.run);
  });

  /** @type {Readonly<Record<string, (n: number) => number>>} where each key moves the cursor */
  const MOVES = {
    ArrowDown: (n) => Math.min(n - 1, cursor + 1),
    ArrowUp: (n) => Math.max(0, Math.min(n - 1, cursor - 1)),
    PageDown: (n) => Math.min(n - 1, Math.max(0, cursor) + VISIBLE),
    PageUp: () => Math.max(0, cursor - VISIBLE),
    Home: () => 0,
    End: (n) => n - 1,
  };
  scroller.addEventListener("keydown", (ev) => {
    const n = entries.length;
    if (!n || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    const move = Object.hasOwn(MOVES, ev.key) ? MOVES[ev.key] : null;
    if (move) {
      ev.preventDefault();
      ev.stopPropagation(); // the round list's keys are the round list's
      cursor = move(n);
      const at = cursor * ROW_H;
      if (at < top || at >= top + ROW_H * VISIBLE) scroller.scrollTop = top = Math.max(0, at - ROW_H * 2);
      rowsKey = "";
      drawRows();
    } else if ((ev.key === "Enter" || ev.key === " ") && cursor >= 0 && cursor < n) {
      ev.preventDefault();
      ev.stopPropagation();
      const id = entries[cursor].row.run_id;
      if (ev.key === "Enter") show(id);
      else if (host.compare) tick(id);
    }
  });

  /** The entries for the rows held and the query, made again only when either changed. */
  function prepare() {
    const key = `${s.runsVersion}|${q.outcome}|${q.toolErrors}|${q.text.trim().toLowerCase()}|${q.sort}|${q.desc}`;
    if (key === entriesKey) return;
    entriesKey = key;
    if (treeV !== s.runsVersion) {
      treeV = s.runsVersion;
      tree = orderRuns(s.runs, s.runsLeftOut); // the rows' own order, made again only when they change
    }
    const made = queryRuns(s.runs, s.runsLeftOut, q, tree);
    if (!sameOrder(entries, made.entries) || flat !== made.flat) orderV++; // else a changed row redraws alone
    entries = made.entries;
    flat = made.flat;
    nested = flat ? new Map() : nestedCounts(entries);
    ticked = ticked.filter((id) => s.runs.has(id));
  }

  function drawCounts() {
    const key = `${s.runsVersion}|${q.outcome}|${q.toolErrors}`;
    if (key === countsKey) return;
    countsKey = key;
    const c = countRuns(s.runs.values());
    const frag = document.createDocumentFragment();
    for (const [outcome, n] of c.outcomes) {
      const row = /** @type {RunRow} */ ({ status: countStatus(outcome), outcome: outcome === "running" || outcome === "idle" ? null : outcome });
      const b = button("", "tl-count", () => {});
      b.dataset.count = outcome;
      b.append(dot(runDot(row)), h("span", null, outcomeKeyWords(outcome)), h("span", "tl-num tl-count-n", count(n)));
      b.setAttribute("aria-pressed", String(q.outcome === outcome));
      b.title = q.outcome === outcome ? "Showing only these runs: click to show every outcome" : "Show only these runs";
      frag.append(b);
    }
    if (c.toolErrors || q.toolErrors) {
      const b = button("", "tl-count tl-count-toolerr", () => {});
      b.dataset.count = "tool_errors";
      b.append(dot("error"), h("span", null, "tool errors"), h("span", "tl-num tl-count-n", count(c.toolErrors)));
      b.setAttribute("aria-pressed", String(q.toolErrors));
      b.title = q.toolErrors ? "Showing only runs whose tools failed: click to show every run" : "Show only runs with a tool call that failed";
      frag.append(b);
    }
    counts.replaceChildren(frag);
  }

  function draw() {
    const many = s.runs.size >= 2;
    box.hidden = !many;
    if (!many) return;
    prepare();
    drawCounts();
    title.textContent = runsTitle(s.runs.size, s.runsLeftOut);
    title.title = visible(s.runsLetGo || "");
    note.textContent = visible(s.runsNote || "") || (host.compare ? (ticked.length === 1 ? "tick one more run to compare" : "") : "");
    newest.hidden = !host.showRun;
    newest.disabled = s.runsPinned === null;
    newest.setAttribute("aria-pressed", String(s.runsPinned === null));
    newest.title = s.runsPinned === null ? "Showing the newest run, and each new one as it starts" : "Show the newest run, and each new one as it starts";
    compare.hidden = !host.compare;
    box.classList.toggle("tl-ticks", !!host.compare);
    compare.disabled = ticked.length !== 2;
    if (sort.value !== q.sort) sort.value = q.sort;
    if (search.value !== q.text) search.value = q.text;
    order.textContent = q.sort === "start" ? (q.desc ? "latest first" : "earliest first") : q.desc ? "largest first" : "smallest first";
    order.title = "Reverse the order";
    const filtered = !isDefault(q);
    clear.hidden = !filtered;
    shownCount.textContent = filtered ? `${count(entries.length)} of ${plural(s.runs.size, "run")} shown` : "";
    empty.hidden = entries.length > 0;
    scroller.hidden = entries.length === 0;
    scroller.style.height = `${ROW_H * Math.min(VISIBLE, entries.length)}px`;
    spacer.style.height = `${ROW_H * entries.length}px`;
    drawRows();
  }

  function drawRows() {
    const n = entries.length;
    const first = Math.max(0, Math.min(Math.floor(top / ROW_H), n - VISIBLE) - OVERSCAN);
    const last = Math.min(n, first + VISIBLE + 2 * OVERSCAN);
    const shownId = s.run.runId;
    const key = `${orderV}:${first}:${last}:${shownId}:${s.runsPinned}:${ticked.join(",")}:${cursor}:${!!host.compare}`;
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
    const at = cursor >= 0 && cursor < n ? entries[cursor].row.run_id : null;
    if (at) scroller.setAttribute("aria-activedescendant", `tl-run-${cursor}`);
    else scroller.removeAttribute("aria-activedescendant");
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
    const el = h("div", "tl-run" + (isShown ? " tl-selected" : "") + (i === cursor ? " tl-cursor" : "") + (host.showRun ? " tl-clickable" : "") + (row.tool_errors > 0 ? " tl-r-failed-tools" : ""));
    el.dataset.run = id;
    el.dataset.at = String(i);
    el.id = `tl-run-${i}`;
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
    name.style.paddingLeft = `${flat ? 0 : entry.depth * INDENT}px`;
    if (entry.depth && !flat) name.append(h("span", "tl-meta", "↳ "));
    name.append(h("span", "tl-r-label", runName(entry)));
    const by = calledBy(entry);
    if (by) name.append(h("span", "tl-meta tl-r-by", by));
    if (isShown) {
      const chip = h("span", "tl-chip tl-r-shown", s.runsPinned === id ? "pinned" : "shown");
      chip.title = s.runsPinned === id ? "Shown, and kept on screen while other runs start" : "Shown: the newest run";
      name.append(chip);
    }
    if (row.question) name.append(h("span", "tl-meta tl-r-q", row.question));
    const cost = h("span", "tl-r-num", usd(row.cost_usd));
    const under = nested.get(id) || 0;
    if (under) cost.title = `this run alone; ${withNested(row, under)}`;
    const start = h("span", "tl-r-start tl-num", startTime(row.started_at));
    if (row.started_at) start.title = visible(String(row.started_at));
    const tok = h("span", "tl-r-num tl-r-tok", tokens(row.input_tokens + row.output_tokens));
    tok.title = `${tokens(row.input_tokens)} in · ${tokens(row.output_tokens)} out`;
    const outcome = h("span", "tl-r-outcome", dot(runDot(row)), h("span", "tl-r-said", runOutcome(row)), ...runMarks(row));
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
    el.title = visible([runName(entry), by, row.question ? `asked: ${row.question}` : "", row.tags.length ? `tags: ${row.tags.join(", ")}` : "", row.tool_errors ? plural(row.tool_errors, "tool call") + " failed" : ""].filter(Boolean).join(" · "));
    return el;
  }

  return {
    nodes: { runs: box },
    draw,
    forget() {
      rowsKey = "";
      countsKey = "";
    },
  };
}
