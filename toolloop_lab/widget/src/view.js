// @ts-check
// One view of a store: its parts (header, controls, the whole-run timeline, the round
// list, detail, fork) laid out in a region, drawn on the next animation frame after a
// change (at most every DRAW_MS while events stream in), with the timers of a live run
// ticking between draws.

import { createCompare } from "./compare.js";
import { numbered } from "./control.js";
import { createControls } from "./controls.js";
import { createDetail } from "./detail.js";
import { h } from "./dom.js";
import { createFork } from "./fork.js";
import { createGantt } from "./gantt.js";
import { createHeader } from "./header.js";
import { keepFieldKeys } from "./keys.js";
import { isDone } from "./run.js";
import { createRuns } from "./runs.js";
import { stamp } from "./store.js";
import { createTimeline } from "./timeline.js";

/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./context.js").Host} Host */
/** @typedef {import("./context.js").ViewContext} ViewContext */

const TICK_MS = 250; // timer refresh while a run is live
const DRAW_MS = 150; // shortest time between two redraws driven by new events

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
    live: [],
    liveRows: [],
    liveDetail: [],
    ask: (msg, onAnswer) => host.send(numbered(s.requests, msg, onAnswer)),
  };
  const header = createHeader(ctx);
  const runs = createRuns(ctx);
  const controls = createControls(ctx);
  const timeline = createTimeline(ctx);
  const gantt = createGantt(ctx, (r) => timeline.open(r));
  const fork = createFork(ctx);
  const comparing = createCompare(ctx);
  const detail = createDetail(ctx, fork.nodes, fork.draw);
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

  function draw() {
    raf = 0;
    lastDraw = performance.now();
    const version = stamp(s);
    if (version === lastVersion) return;
    lastVersion = version;
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
    runs.draw();
    header.draw();
    comparing.draw();
    controls.draw();
    timeline.drawFilter();
    timeline.drawRows();
    gantt.draw();
    detail.draw();
    ticking();
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
    for (const [node, fn] of ctx.live) node.textContent = fn();
    for (const [node, fn] of ctx.liveRows) node.textContent = fn();
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
    timeline.dispose();
    gantt.dispose();
    detail.dispose();
    clearTimeout(later);
    root.remove();
  };
}
