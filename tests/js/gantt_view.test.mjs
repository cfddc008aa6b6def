// The whole-run timeline on a page (jsdom): nested runs as lanes of their own, opened with
// the host's showRun where the page has one, else by the round whose tool started them.
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { src } from "./fixtures.mjs";
import { FOUR_ROUNDS, script } from "./run_script.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame", "HTMLButtonElement", "getComputedStyle"]) globalThis[name] = dom.window[name];
dom.window.HTMLCanvasElement.prototype.getContext = () => null; // jsdom has no canvas
Object.defineProperty(dom.window.HTMLElement.prototype, "clientWidth", { configurable: true, get: () => 540 });
const { createStore, enqueue } = await import(src("store.js"));
const { createView } = await import(src("view.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks
const host = (extra = {}) => ({ live: false, pauseOn: () => "off", setPauseOn() {}, control() {}, send() {}, forking: false, canFork: () => false, ...extra });
const row = (id, parent, offset, extra = {}) => ({ run_id: id, parent_run_id: parent, parent_tool_call_id: "c3_0", parent_tool_name: "a", name: null, tags: [], status: "finished", outcome: "final_answer", duration_s: 1.5, offset_s: offset, spans: [], spans_left_out: 0, ...extra });

async function shown(hostExtra) {
  const el = document.createElement("div");
  document.body.append(el);
  const s = createStore();
  s.source = "static";
  const dispose = createView(el, s, host(hostExtra));
  enqueue(s, script(FOUR_ROUNDS));
  s.runs = new Map([
    ["sub", row("sub", "run-1", 9.3, { name: "researcher", spans: [["model", 0, 0.5, false], ["tool", 0.5, 1.2, true]] })],
    ["subsub", row("subsub", "sub", 9.9, { status: "failed", outcome: "failed", spans: [["model", 0, 0.2, true]] })],
    ["elsewhere", row("elsewhere", "another-run", 1)],
  ]);
  s.version++;
  for (const fn of s.listeners) fn();
  await frame();
  return { el, s, dispose };
}

const nestedY = (i) => 24 + (3 + i) * 22 + 11; // below the model, tools and paused lanes

test("nested runs get lanes of their own, named, indented under their parent", async () => {
  const { el, dispose } = await shown();
  const labels = [...el.querySelectorAll(".tl-gantt-label")];
  assert.deepEqual(labels.map((n) => n.textContent), ["model", "tools", "paused", "researcher", "a"]);
  assert.equal(labels[3].tagName, "SPAN"); // no run list on this page: nothing to open
  assert.equal(labels[4].style.paddingLeft, "10px");
  assert.match(labels[4].title, /nested under this one \(failed\)/);
  assert.equal(el.querySelector(".tl-gantt-marks").textContent, "slowest: round 3, 6.2 s · 1 failed call (round 2) · 2 failed calls in nested runs");
  dispose();
});

test("a click in a nested run's lane opens the round that started it, or the run itself", async () => {
  const first = await shown();
  const canvas = first.el.querySelector(".tl-gantt-canvas");
  const at = (t, lane) => ({ bubbles: true, clientX: (t / 13.5) * 540, clientY: nestedY(lane) });
  canvas.dispatchEvent(new dom.window.MouseEvent("mousemove", at(10.2, 0)));
  assert.equal(first.el.querySelector(".tl-gantt-tip").textContent, "researcher · tool · 700 ms · failed · click for the round 3 that started it");
  canvas.dispatchEvent(new dom.window.MouseEvent("click", at(10.2, 0)));
  await frame();
  assert.equal(first.el.querySelector(".tl-detail-title").textContent, "Round 3");
  first.dispose();

  const asked = [];
  const second = await shown({ showRun: (id) => asked.push(id) });
  const canvas2 = second.el.querySelector(".tl-gantt-canvas");
  canvas2.dispatchEvent(new dom.window.MouseEvent("click", { bubbles: true, clientX: (10 / 13.5) * 540, clientY: nestedY(1) }));
  const button = second.el.querySelectorAll(".tl-gantt-label")[3];
  assert.equal(button.tagName, "BUTTON");
  button.click();
  assert.deepEqual(asked, ["subsub", "sub"]);
  second.dispose();
});
