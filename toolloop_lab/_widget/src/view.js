// @ts-check
// One view of a store: its parts (header, controls, the whole-run timeline, the round
// list, detail, fork) laid out in a region, drawn from the next animation frame after a
// change (at most every DRAW_MS while events stream in) in slices of at most about
// SLICE_MS, with the timers of a live run ticking between draws.

import { createCompare } from "./compare.js";
import { numbered } from "./control_state.js";
import { createControls } from "./controls.js";
import { createDetail } from "./detail.js";
import { h } from "./dom.js";
import { createEditor } from "./editor.js";
import { visible } from "./format.js";
import { createFork } from "./fork.js";
import { createGantt } from "./gantt.js";
import { createHeader } from "./header.js";
import { keepFieldKeys } from "./keys.js";
import { isDone } from "./run.js";
import { createRuns } from "./run_list.js";
import { soon, stamp } from "./store.js";
import { createTimeline } from "./timeline.js";

/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./context.js").Host} Host */
/** @typedef {import("./context.js").ViewContext} ViewContext */

const TICK_MS = 250; // timer refresh while a run is live
const DRAW_MS = 150; // shortest time between two redraws driven by new events
const SLICE_MS = 8; // the longest a draw holds the page before the rest waits a task
const NEXT_FRAME = () => {}; // in the list of parts: what follows draws on the next frame

/**
 * Draw `s` into `el` and keep drawing it as it changes; returns what removes the view.
 * @param {HTMLElement} el
 * @param {Store} s
 * @param {Host} host
 * @returns {() => void}
 */
export function createView(el, s, host) {
  const root = h("div", "tl-root");
  root.setAttribute("role", "region");
  root.setAttribute("aria-label", "Agent loop debugger");
  el.append(root);
  const releaseKeys = keepFieldKeys(root); // Shift+Enter in an editor never re-runs the cell
  /** @type {ViewContext} */
  const ctx = {
    s,
    host,
    redraw,
    drawn: (fn) => afterNext.push(fn),
    live: [],
    liveRows: [],
    liveDetail: [],
    ask: (msg, onAnswer) => host.send(numbered(s.requests, msg, onAnswer)),
  };
  const header = createHeader(ctx);
  const runs = createRuns(ctx);
  const editor = createEditor(ctx);
  const controls = createControls(ctx, editor);
  const timeline = createTimeline(ctx);
  const gantt = createGantt(ctx, (r) => timeline.open(r));
  const fork = createFork(ctx);
  const comparing = createCompare(ctx);
  const detail = createDetail(ctx, fork.nodes, fork.draw, editor);
  const { head, activity, note, totals, gauges } = header.nodes;
  const { toolbar } = timeline.nodes;
  root.append(runs.nodes.runs, head, activity, note, fork.nodes.forkBox, comparing.nodes.compareBox, totals, gauges, controls.nodes.controls, controls.nodes.banner, controls.nodes.failureBox, gantt.nodes.gantt, toolbar, timeline.nodes.timeline, detail.nodes.detail);

  let lastVersion = -1;
  /** @type {number | null} */
  let lastEpoch = null;
  /** @type {string | null} */
  let lastRunId = null;
  let raf = 0;
  /** @type {ReturnType<typeof setInterval> | 0} */
  let tick = 0;
  let lastDraw = 0;
  /** @type {ReturnType<typeof setTimeout> | 0} */
  let later = 0;

  /**
   * Draw on the next frame, at most every DRAW_MS while events stream in (a fast run
   * sends ten batches a second; each draw costs layout); a click draws on the next frame.
   * @param {boolean} [force]
   */
  function redraw(force) {
    if (force) {
      lastVersion = -1;
      detail.forget();
      timeline.forget();
      runs.forget();
    }
    if (raf || (later && !force)) return;
    const wait = force ? 0 : DRAW_MS - (performance.now() - lastDraw);
    if (wait > 0) {
      later = setTimeout(() => {
        later = 0;
        if (!raf) raf = requestAnimationFrame(draw);
      }, wait);
      return;
    }
    raf = requestAnimationFrame(draw);
  }

  /**
   * The parts in the order they draw. First the round list and its scroll: scrolling lays
   * the page out there and then, cheap while nothing but the list (laid out on its own)
   * has changed since the last frame. Then every other part that writes the page's text;
   * on the next frame, the canvas.
   * @type {(() => void)[]}
   */
  const parts = [timeline.prepare, timeline.drawRows, timeline.scroll, runs.draw, header.draw, comparing.draw, controls.draw, timeline.drawFilter, gantt.draw, detail.draw, NEXT_FRAME, gantt.paint, ticking];
  let next = 0; // the part a draw cut short goes on with (0: none)
  let cut = false; // a draw was cut short: the rest comes in the next task
  let gone = false;
  /** @type {(() => void)[]} what waits for the next draw to end (ctx.drawn) */
  const afterNext = [];
  /** @type {(() => void)[]} what waits for the draw going on to end */
  let ending = [];

  /**
   * Draw every part that changed; past SLICE_MS the rest draws in the next task, so no
   * task holds the page long (each part keeps its own key: nothing drawn twice).
   */
  function draw() {
    raf = 0;
    if (cut) return; // a draw cut short goes on by itself
    const began = performance.now();
    if (next === 0 && !begin()) return;
    while (next < parts.length) {
      const part = parts[next++];
      if (part === NEXT_FRAME) {
        cutShort();
        requestAnimationFrame(goOn);
        return;
      }
      part();
      if (next < parts.length && parts[next] !== NEXT_FRAME && performance.now() - began > SLICE_MS) {
        cutShort();
        soon(goOn);
        return;
      }
    }
    next = 0;
    root.removeAttribute("data-drawing");
    for (const fn of ending.splice(0)) fn();
    if (stamp(s) !== lastVersion) redraw(lastVersion === -1);
  }

  /** Mark a draw cut short: it goes on in a later task (the root says so until it ends). */
  function cutShort() {
    cut = true;
    root.setAttribute("data-drawing", "");
  }

  /** Go on with a draw cut short (in a task or a frame of its own: the page draws in between). */
  function goOn() {
    if (!cut || gone) return;
    cut = false;
    draw();
  }

  /**
   * Start a draw: false when nothing changed since the last.
   * @returns {boolean}
   */
  function begin() {
    lastDraw = performance.now();
    const version = stamp(s);
    if (version === lastVersion) return false;
    lastVersion = version;
    ending = afterNext.splice(0);
    if (s.link.epoch !== lastEpoch) {
      // another run (or the same one sent again): nothing drawn of the last one is reused
      lastEpoch = s.link.epoch;
      detail.forget();
      timeline.forget();
      if (lastRunId !== null && s.run.runId !== lastRunId) {
        s.ui.selected = null;
        s.ui.follow = true;
      }
    }
    lastRunId = s.run.runId;
    return true;
  }

  function ticking() {
    const want = !isDone(s.run) && s.run.status !== "idle" && s.clockBase !== null;
    if (want && !tick) tick = setInterval(tickNow, TICK_MS);
    if (!want && tick) {
      clearInterval(tick);
      tick = 0;
      tickNow();
    }
  }
  function tickNow() {
    // a ticking line names a model or a tool: shown by the rule every text of the page follows
    for (const [node, fn] of ctx.live) node.textContent = visible(fn());
    for (const [node, fn] of ctx.liveRows) node.textContent = visible(fn());
    for (const [node, fn] of ctx.liveDetail) fn(node);
    gantt.tick();
  }

  const listener = () => redraw(false);
  s.listeners.add(listener);
  redraw(true);
  return () => {
    s.listeners.delete(listener);
    releaseKeys();
    if (tick) clearInterval(tick);
    if (raf) cancelAnimationFrame(raf);
    gone = true;
    timeline.dispose();
    gantt.dispose();
    detail.dispose();
    clearTimeout(later);
    root.remove();
  };
}
