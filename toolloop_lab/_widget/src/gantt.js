// @ts-check
// The whole-run timeline: one Gantt of every model call, tool, pruning call and pause
// across all rounds, on the run's clock, with the runs nested under it as lanes of their
// own. It is also a way to move around: a click on a bar (or a round's band) opens that
// round, a click on a nested run opens that run, and the keys of the round list work here
// too. Drawn on one <canvas> (a 10,000-round run stays a handful of nodes); the words
// above it say where the time went, which round was slowest and what failed.

import { dot, h } from "./dom.js";
import { duration, plural, visible } from "./format.js";
import { createCache, current, runItems, slowestRound, timeSplit } from "./gantt_cache.js";
import { LANES, nestedRuns, roundIndexAt, splitText } from "./gantt_data.js";
import { hitCell, pack, scaleOf, tracksOf } from "./gantt_pack.js";
import { LANE_H, STRIP_H, colours, heightFor, paint, trackAt } from "./gantt_paint.js";
import { KEY_ARIA, KEY_HINT, KEY_SHORT, keyMove, seek } from "./keys.js";
import { isErrorRound, roundLabel, roundTime, roundTitle, selectedRound } from "./rounds.js";
import { findTool, isDone } from "./run.js";
import { runNow } from "./store.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */
/** @typedef {import("./run.js").Round} Round */
/** @typedef {import("./gantt_data.js").Item} Item */
/** @typedef {import("./gantt_data.js").Kind} Kind */
/** @typedef {import("./gantt_data.js").Nested} Nested */
/** @typedef {import("./gantt_pack.js").Cell} Cell */
/** @typedef {{name: string, kind: Kind | "nested", items: Item[], nested: Nested | null, cells: Cell[]}} Lane */

const PAGE = 8; // rounds PageUp and PageDown move (the round list's page)
const LONG_RUN = 500; // rounds past which the live picture repaints once a second
const NOUN = { model: "model call", tool: "tool call", pruning: "pruning call", pause: "pause" };

/**
 * @param {ViewContext} ctx
 * @param {(r: Round) => void} open show round `r` (the round list's selection)
 */
export function createGantt(ctx, open) {
  const s = ctx.s;
  const sum = h("span", "tl-gantt-sum tl-num");
  const marks = h("span", "tl-gantt-marks tl-num");
  const note = h("span", "tl-gantt-note tl-meta");
  note.setAttribute("role", "status");
  const hint = h("span", "tl-gantt-keys tl-meta", KEY_SHORT);
  hint.title = KEY_HINT;
  const head = h("div", "tl-gantt-head", h("span", "tl-gantt-title", "Whole run"), sum, marks, note, h("span", "tl-grow"), hint);
  const labels = h("div", "tl-gantt-labels");
  labels.style.paddingTop = `${STRIP_H}px`;
  const canvas = h("canvas", "tl-gantt-canvas");
  canvas.setAttribute("aria-hidden", "true"); // said in words above, and by the round list
  const tip = h("div", "tl-gantt-tip");
  tip.setAttribute("role", "tooltip");
  tip.hidden = true;
  const plot = h("div", "tl-gantt-plot", canvas, tip);
  plot.tabIndex = 0;
  plot.setAttribute("role", "group");
  plot.setAttribute("aria-label", `Timeline of the whole run: click a bar to open its round. ${KEY_HINT}`);
  plot.setAttribute("aria-keyshortcuts", KEY_ARIA);
  const gantt = h("section", "tl-gantt", head, h("div", "tl-gantt-body", labels, plot));
  gantt.setAttribute("aria-label", "Timeline of the whole run");
  gantt.hidden = true;

  const cache = createCache();
  /** @type {Record<Kind, Item[]>} */
  let items = { model: [], tool: [], pruning: [], pause: [] };
  /** @type {Lane[]} */
  let lanes = [];
  let more = 0;
  let width = 0;
  let scale = scaleOf(1, 0);
  let labelKey = "";
  let painted = 0;
  let stale = false; // drawn since last painted
  let placed = false; // draw() placed the bars the next paint shows
  /** @type {Record<string, string> | null} the theme's colours, read again after a theme switch */
  let palette = null;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let themeLater;

  /** Rebuild from the store (a change of the run, the selection or the nested runs). */
  function draw() {
    const run = s.run;
    gantt.hidden = !run.rounds.length || (run.rounds[0].t0 === null && run.rounds.length === 1);
    if (gantt.hidden) return;
    items = runItems(cache, s);
    const nested = nestedRuns(s, runNow(s));
    more = nested.more;
    lanes = [];
    for (const [kind, name] of LANES) if (kind === "model" || kind === "tool" || items[kind].length) lanes.push({ name, kind, items: items[kind], nested: null, cells: [] });
    for (const n of nested.lanes) lanes.push({ name: n.label, kind: "nested", items: n.items, nested: n, cells: [] });
    drawLabels();
    words();
    place();
    placed = true;
    stale = true;
  }

  /** The words on where the time went (DOM text: drawn with the rest of the page). */
  function words() {
    sum.textContent = visible(splitText(s, timeSplit(cache, s)));
    marks.textContent = visible(markText(slowestRound(cache, s)));
  }

  /**
   * Whether what draw() built is of the run the store shows now. A run switch starts the
   * fold over between two draws, and a paint, a resize, a theme switch or a tick can come
   * before the next draw: they ask for that draw instead, and nothing is painted or said
   * from the rounds of the run shown before.
   * @returns {boolean}
   */
  function upToDate() {
    if (current(cache, s)) return true;
    ctx.redraw();
    return false;
  }

  /** The picture, after the page's text is written (painting text on a canvas makes the
   * page work out its styles: done once, when nothing else changes them any more). */
  function paintNow() {
    if (!stale || gantt.hidden || !upToDate()) return;
    stale = false;
    painted = performance.now();
    repaint(slowestRound(cache, s));
  }

  /** What time changes: the words and the picture (a live run's tick). */
  function refresh() {
    if (!upToDate()) return;
    words();
    stale = true;
    paintNow();
  }

  /** @param {ReturnType<typeof slowestRound>} slow */
  function markText(slow) {
    const bits = [];
    if (slow && s.run.rounds.length > 1) bits.push(`slowest: ${roundTitle(s, slow.round).toLowerCase()}, ${duration(slow.time)}`);
    const failing = cache.failing;
    if (cache.failed) {
      const where = failing.slice(0, 3).map((i) => roundLabel(s, s.run.rounds[i]));
      const list = `${failing.length > 1 ? "rounds" : "round"} ${where.join(", ")}${failing.length > 3 ? "…" : ""}`;
      bits.push(`${plural(cache.failed, "failed call")} (${list})`);
    }
    let nestedFailed = 0;
    for (const lane of lanes) if (lane.nested) for (const it of lane.items) if (it.failed) nestedFailed++;
    if (nestedFailed) bits.push(`${plural(nestedFailed, "failed call")} in nested runs`);
    if (more) bits.push(`${plural(more, "more nested run")} not drawn`);
    return bits.join(" · ");
  }

  function drawLabels() {
    const key = lanes.map((l) => `${l.name}\u0000${l.nested ? `${l.nested.id}:${l.nested.depth}:${l.nested.status}` : ""}`).join("\u0001");
    if (key === labelKey) return;
    labelKey = key;
    labels.textContent = "";
    for (const lane of lanes) {
      const n = lane.nested;
      const label = n ? nestedLabel(n) : h("span", "tl-gantt-label", lane.name);
      label.style.height = `${LANE_H}px`;
      labels.append(label);
    }
  }

  /**
   * A nested run's label: its name, opening the run where the page can show it.
   * @param {Nested} n
   * @returns {HTMLElement}
   */
  function nestedLabel(n) {
    const showRun = showRunOf(ctx);
    const state = n.running ? "running" : n.status === "failed" ? "error" : n.status === "cancelled" ? "stopped" : "answer";
    const el = showRun ? h("button", "tl-gantt-label tl-gantt-run", dot(state), n.label) : h("span", "tl-gantt-label tl-gantt-run", dot(state), n.label);
    el.style.paddingLeft = `${(n.depth - 1) * 10}px`;
    el.title = visible(`${n.label}: a run nested under this one (${n.status || "running"})${showRun ? "; click to show it" : ""}`);
    if (showRun) {
      el.setAttribute("type", "button");
      el.addEventListener("click", () => showRun(n.id));
    }
    return el;
  }

  /** The scale and every lane's bars in pixels (no DOM: what a click or a tip reads). */
  function place() {
    if (!width) width = Math.floor(plot.clientWidth);
    const now = runNow(s);
    let span = now;
    for (const lane of lanes) if (lane.nested) span = Math.max(span, lane.nested.end);
    scale = scaleOf(span, width);
    for (const lane of lanes) lane.cells = pack(lane.items, scale, now);
  }

  /** @param {ReturnType<typeof slowestRound>} slow */
  function repaint(slow) {
    if (placed) placed = false;
    else place();
    if (!width) return;
    const rounds = s.run.rounds;
    const fits = rounds.length * 4 <= width;
    const band = (/** @type {Round} */ r) => ({ x0: scale.x(r.t0 || 0), x1: scale.x(Math.max(r.t0 || 0, roundEndOf(r))) });
    const sel = selectedRound(s);
    if (!palette) palette = colours(gantt);
    paint(canvas, palette, {
      scale,
      lanes,
      bands: fits ? rounds.filter((r) => r.t0 !== null).map((r) => ({ ...band(r), label: roundLabel(s, r) })) : [],
      slowest: slow && rounds.length > 1 ? { x0: scale.x(slow.t0), x1: scale.x(slow.t1), label: `slowest ${duration(slow.time)}` } : null,
      selected: sel && sel.t0 !== null ? band(sel) : null,
    });
  }

  /**
   * Where a round ends on the picture: where the next begins, or its own end.
   * @param {Round} r
   * @returns {number}
   */
  function roundEndOf(r) {
    const next = s.run.rounds[r.index + 1];
    if (next && next.t0 !== null) return next.t0;
    return isDone(s.run) ? s.run.lastT : runNow(s);
  }

  /**
   * What is at (x, y): its words and what a click does; null over nothing.
   * @param {number} x
   * @param {number} y
   * @returns {{text: string, act: () => void} | null}
   */
  function target(x, y) {
    const li = Math.floor((y - STRIP_H) / LANE_H);
    const lane = li >= 0 && li < lanes.length ? lanes[li] : null;
    let ci = -1;
    if (lane) {
      const tracks = tracksOf(lane.cells);
      if (tracks > 1) ci = hitCell(lane.cells, x, 3, trackAt(tracks, y - STRIP_H - li * LANE_H));
      if (ci < 0) ci = hitCell(lane.cells, x);
    }
    if (lane && lane.nested) return nestedTarget(lane.nested, ci >= 0 ? lane.items[lane.cells[ci].first] : null);
    if (!lane || ci < 0) return roundTarget(x);
    const cell = lane.cells[ci];
    const its = lane.items.slice(cell.first, cell.first + cell.count);
    const pick = its.find((it) => it.failed) || its[0];
    const r = s.run.byNumber.get(pick.round);
    if (!r) return null;
    const text = cell.count === 1 ? itemText(r, pick) : mergedText(its, pick, cell.failed);
    return { text, act: () => open(r) };
  }

  /**
   * @param {Round} r
   * @param {Item} it
   * @returns {string}
   */
  function itemText(r, it) {
    const end = it.t1 === null ? runNow(s) : it.t1;
    return `${roundTitle(s, r)} · ${it.label} · ${duration(end - it.t0)}${it.t1 === null ? " so far" : ""} · ${it.said}`;
  }

  /**
   * @param {Item[]} its
   * @param {Item} pick
   * @param {number} failed
   * @returns {string}
   */
  function mergedText(its, pick, failed) {
    const first = s.run.byNumber.get(its[0].round);
    const last = s.run.byNumber.get(its[its.length - 1].round);
    const which = (/** @type {Round | undefined} */ r) => (r ? roundLabel(s, r) : "?");
    const span = first === last ? `round ${which(first)}` : `rounds ${which(first)}–${which(last)}`;
    const bad = failed ? `, ${failed} failed` : "";
    const r = s.run.byNumber.get(pick.round);
    return `${plural(its.length, NOUN[pick.kind])} in ${span}${bad} · click for ${r ? roundTitle(s, r).toLowerCase() : "it"}`;
  }

  /**
   * @param {number} x
   * @returns {{text: string, act: () => void} | null}
   */
  function roundTarget(x) {
    const i = roundIndexAt(s.run.rounds, scale.t(x));
    const r = s.run.rounds[i];
    if (!r) return null;
    return { text: `${roundTitle(s, r)} · ${duration(roundTime(s, r))}`, act: () => open(r) };
  }

  /**
   * @param {Nested} n
   * @param {Item | null} it
   * @returns {{text: string, act: () => void}}
   */
  function nestedTarget(n, it) {
    const showRun = showRunOf(ctx);
    const what = it ? ` · ${it.label} · ${duration((it.t1 === null ? runNow(s) : it.t1) - it.t0)} · ${it.said}` : "";
    const parent = n.toolCallId ? s.run.rounds.find((r) => findTool(r, /** @type {string} */ (n.toolCallId)) !== undefined) : undefined;
    const click = showRun ? " · click to show this run" : parent ? ` · click for the ${roundTitle(s, parent).toLowerCase()} that started it` : "";
    return {
      text: `${n.label}${what}${click}`,
      act: () => {
        if (showRun) showRun(n.id);
        else if (parent) open(parent);
      },
    };
  }

  /** @param {MouseEvent} ev */
  const point = (ev) => {
    const box = canvas.getBoundingClientRect();
    return [ev.clientX - box.left, ev.clientY - box.top];
  };
  canvas.addEventListener("mousemove", (ev) => {
    const [x, y] = point(ev);
    const at = target(x, y);
    tip.hidden = !at;
    canvas.style.cursor = at ? "pointer" : "";
    if (!at) return;
    tip.textContent = visible(at.text);
    const left = x < width / 2;
    tip.style.left = left ? `${x + 12}px` : "";
    tip.style.right = left ? "" : `${width - x + 12}px`;
    tip.style.top = `${y + 16}px`;
  });
  canvas.addEventListener("mouseleave", () => (tip.hidden = true));
  canvas.addEventListener("click", (ev) => {
    const [x, y] = point(ev);
    const at = target(x, y);
    if (at) at.act();
  });
  plot.addEventListener("keydown", (ev) => {
    const rounds = s.run.rounds;
    const sel = selectedRound(s);
    const cur = sel ? sel.index : rounds.length - 1;
    const move = keyMove(ev, cur, rounds.length, PAGE);
    if (!move) return;
    ev.preventDefault();
    ev.stopPropagation(); // ours: the notebook must not act on it too
    note.textContent = "";
    if (!rounds.length) return;
    if (move.kind === "go") return open(rounds[move.index]);
    const i = seek(cur, move.step, rounds.length, (j) => isErrorRound(s, rounds[j]));
    if (i >= 0) open(rounds[i]);
    else note.textContent = move.step > 0 ? "no error after this round" : "no error before this round";
  });

  const resized = typeof ResizeObserver === "function" ? new ResizeObserver((entries) => {
    const w = Math.floor(entries[entries.length - 1].contentRect.width);
    if (w === width || gantt.hidden) return;
    width = w;
    if (upToDate()) repaint(slowestRound(cache, s));
  }) : null;
  if (resized) resized.observe(plot);
  // a theme switch changes the colours the canvas was painted with
  const themed = typeof MutationObserver === "function" && document.body ? new MutationObserver(() => {
    const again = () => {
      palette = null;
      if (!gantt.hidden && upToDate()) repaint(slowestRound(cache, s));
    };
    again();
    clearTimeout(themeLater);
    themeLater = setTimeout(again, 400); // its stylesheet may come a moment after the switch
  }) : null;
  if (themed && document.body) themed.observe(document.body, { attributes: true, attributeFilter: ["data-jp-theme-name", "data-jp-theme-light", "class"] });

  return {
    nodes: { gantt },
    draw,
    /** Paint what draw() prepared (after every part of the view wrote its text). */
    paint: paintNow,
    /** A live run's timer: bars in progress grow. */
    tick() {
      // a redraw painted it a moment ago: the next tick will do; a long run's picture
      // (every round a pixel or less) moves too little to repaint more than once a second
      const every = s.run.rounds.length > LONG_RUN ? 1000 : 200;
      if (!gantt.hidden && !isDone(s.run) && performance.now() - painted > every) refresh();
    },
    /** What the picture holds now (for tests): its lanes, cells and scale. */
    picture: () => ({ lanes, scale, height: heightFor(lanes.length) }),
    dispose() {
      if (resized) resized.disconnect();
      if (themed) themed.disconnect();
      clearTimeout(themeLater);
    },
  };
}

/**
 * The host's showRun (the run list's), when this page has one.
 * @param {ViewContext} ctx
 * @returns {((runId: string) => void) | null}
 */
function showRunOf(ctx) {
  const fn = /** @type {any} */ (ctx.host).showRun;
  return typeof fn === "function" ? (id) => fn.call(ctx.host, id) : null;
}
