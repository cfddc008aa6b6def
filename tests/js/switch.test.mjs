// A run switch (a click in the run list, a replay) with a longer run shown before: the
// handlers that fire between draws (a resize of the timeline, a theme switch, a live
// run's tick, a scroll or a key in the round list) must never read the rounds of the run
// shown before, and the next draw shows the new run only.
import assert from "node:assert/strict";
import { test } from "node:test";
import { JSDOM, VirtualConsole } from "jsdom";
import { settled, src } from "./fixtures.mjs";
import { script } from "./run_script.mjs";

const errors = []; // what a handler threw, as a page would see it
const virtualConsole = new VirtualConsole();
virtualConsole.on("jsdomError", (err) => errors.push(err));
const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true, virtualConsole });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame", "HTMLButtonElement", "HTMLElement", "getComputedStyle", "MutationObserver", "KeyboardEvent"]) globalThis[name] = dom.window[name];
dom.window.HTMLCanvasElement.prototype.getContext = () => null; // jsdom has no canvas
let width = 540;
Object.defineProperty(dom.window.HTMLElement.prototype, "clientWidth", { configurable: true, get: () => width });

/** A ResizeObserver the test fires by hand (jsdom has none). */
const observers = [];
globalThis.ResizeObserver = class {
  constructor(fn) {
    this.fn = fn;
    this.targets = [];
    observers.push(this);
  }
  observe(el) {
    this.targets.push(el);
  }
  disconnect() {
    this.targets = [];
  }
};
function resizeTo(w) {
  width = w;
  for (const o of observers) for (const el of o.targets) o.fn([{ target: el, contentRect: { width: w, height: 100 } }]);
}

const { createStore, receive } = await import(src("store.js"));
const { createView } = await import(src("view.js"));
const { createGantt } = await import(src("gantt.js"));

process.on("uncaughtException", (err) => errors.push(err));
const host = { live: true, pauseOn: () => "off", setPauseOn() {}, control() {}, send() {}, forking: false, canFork: () => false, showRun() {} };

/** `n` rounds of one tool each, the last answering; `t` seconds a round. */
function rounds(n, t = 1) {
  return Array.from({ length: n }, (_, i) => (i < n - 1 ? { call: [i * t, i * t + t / 2], tools: [["a", i * t + t / 2, (i + 1) * t, i === 3 ? "error" : "success", i === 3 ? "tool_error" : null]] } : { call: [i * t, i * t + t / 2] }));
}

let epoch = 0;
/** Python's message starting the page over on `events` (what show_run makes it send). */
const startOver = (events, finished = true) => ({ type: "events", epoch: ++epoch, first: 0, reset: true, events, now: events[events.length - 1].t, control: { paused_at: null, running: !finished, note: null, stopped_by_user: false } });

async function shownLong() {
  const el = document.createElement("div");
  document.body.append(el);
  const s = createStore();
  s.live = true;
  const dispose = createView(el, s, host);
  receive(s, startOver(script(rounds(24), { runId: "long" })));
  await settled();
  assert.equal(el.querySelectorAll(".tl-gantt-label").length > 0, true);
  assert.match(el.querySelector(".tl-gantt-marks").textContent, /slowest/);
  return { el, s, dispose };
}

test("a resize and a theme switch right after a switch to a shorter run never read the longer run's rounds", async () => {
  errors.length = 0;
  const { el, s, dispose } = await shownLong();
  receive(s, startOver(script(rounds(2, 3), { runId: "short" })));
  // before the view drew the new run: the timeline is resized, the theme switched
  resizeTo(480);
  document.body.setAttribute("data-jp-theme-name", "JupyterLab Dark");
  await new Promise((r) => setTimeout(r, 0)); // the mutation observer's callback
  assert.deepEqual(errors.map(String), []);
  await settled(500); // the theme's second look, 400 ms on
  assert.deepEqual(errors.map(String), []);
  assert.equal(s.run.runId, "short");
  assert.equal(el.querySelectorAll(".tl-row[data-n]").length, 2);
  assert.doesNotMatch(el.querySelector(".tl-gantt-marks").textContent, /round (2[0-4]|1\d|[3-9])\b/);
  dispose();
});

test("the timeline's tick and paint right after a switch from a longer run wait for the next draw", async () => {
  const s = createStore();
  let asked = 0;
  const ctx = { s, host, redraw: () => asked++, drawn() {}, live: [], liveRows: [], liveDetail: [], ask() {} };
  const gantt = createGantt(ctx, () => {});
  document.body.append(gantt.nodes.gantt);
  receive(s, startOver(script(rounds(24), { runId: "long", finished: false }), false));
  await settled();
  gantt.draw();
  gantt.paint();
  gantt.draw(); // its picture is painted on the next frame...
  // ...and before it, the run list switches to a shorter live run: its events are folded
  receive(s, startOver(script(rounds(2, 3), { runId: "live", finished: false }), false));
  await settled();
  gantt.paint();
  assert.equal(asked, 1, "a draw is asked for");
  await settled(250);
  gantt.tick(); // a live run's timer, between two draws
  assert.equal(asked, 2, "a draw is asked for");
  gantt.draw();
  gantt.paint();
  assert.doesNotMatch(gantt.nodes.gantt.textContent, /round (2[0-4]|1\d|[3-9])\b/);
  assert.equal(gantt.picture().lanes[0].items.length, 2); // the new run's two model calls
  gantt.dispose();
});

test("a scroll or a key in a filtered round list right after a switch reads only the new run", async () => {
  errors.length = 0;
  const { el, s, dispose } = await shownLong();
  // errors only: the list holds round 4 (its tool failed) of the long run
  const which = el.querySelector(".tl-toolbar select");
  which.value = "errors";
  which.dispatchEvent(new dom.window.Event("change"));
  await settled();
  assert.equal(el.querySelectorAll(".tl-row[data-n]").length, 1);
  receive(s, startOver(script(rounds(2, 3), { runId: "short" })));
  const list = el.querySelector(".tl-timeline .tl-scroller");
  list.dispatchEvent(new dom.window.Event("scroll"));
  list.dispatchEvent(new dom.window.KeyboardEvent("keydown", { key: "Home", bubbles: true }));
  list.dispatchEvent(new dom.window.KeyboardEvent("keydown", { key: "End", bubbles: true }));
  await settled(300); // a draw follows a change at most every 150 ms
  assert.deepEqual(errors.map(String), []);
  assert.equal(s.run.runId, "short");
  for (const row of el.querySelectorAll(".tl-row[data-n]")) assert.ok(Number(row.dataset.n) <= 2, row.dataset.n);
  dispose();
});
