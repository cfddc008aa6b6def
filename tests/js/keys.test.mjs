// Moving around: the keys of the round list and the whole-run timeline, what they do on a
// page (jsdom), and what they leave alone (typing, modifiers: the notebook's keys).
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { src } from "./fixtures.mjs";
import { FOUR_ROUNDS, script } from "./run_script.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame", "HTMLButtonElement", "getComputedStyle"]) globalThis[name] = dom.window[name];
// jsdom has no canvas: the picture is computed, never painted (no "not implemented" noise)
dom.window.HTMLCanvasElement.prototype.getContext = () => null;
const { keyMove, seek, typing } = await import(src("keys.js"));
const { mount } = await import(src("debugger.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks
const key = (k, extra = {}) => ({ key: k, target: null, ...extra });

test("Home, End, PageUp, PageDown and the arrows move within the list's bounds", () => {
  const at = (k, cur) => keyMove(key(k), cur, 100, 8);
  assert.deepEqual([at("Home", 50).index, at("End", 50).index], [0, 99]);
  assert.deepEqual([at("PageDown", 50).index, at("PageUp", 50).index], [58, 42]);
  assert.deepEqual([at("PageDown", 95).index, at("PageUp", 3).index], [99, 0]);
  assert.deepEqual([at("ArrowDown", 0).index, at("ArrowUp", 0).index, at("ArrowRight", 5).index, at("ArrowLeft", 5).index], [1, 0, 6, 4]);
  assert.deepEqual(keyMove(key("n"), 3, 100, 8), { kind: "error", index: -1, step: 1 });
  assert.deepEqual(keyMove(key("p"), 3, 100, 8), { kind: "error", index: -1, step: -1 });
});

test("keys with a modifier, other keys and keys typed into a field are never taken", () => {
  assert.equal(keyMove(key("Home", { shiftKey: true }), 3, 10, 8), null); // Shift+Home: the notebook's
  assert.equal(keyMove(key("End", { ctrlKey: true }), 3, 10, 8), null);
  assert.equal(keyMove(key("n", { metaKey: true }), 3, 10, 8), null);
  assert.equal(keyMove(key("Enter", { shiftKey: true }), 3, 10, 8), null);
  assert.equal(keyMove(key("a"), 3, 10, 8), null);
  const area = document.createElement("textarea");
  const editable = document.createElement("div");
  editable.setAttribute("contenteditable", "true");
  const inner = document.createElement("span");
  editable.append(inner);
  document.body.append(area, editable);
  for (const target of [area, document.createElement("input"), document.createElement("select"), inner]) {
    assert.equal(typing(target), true);
    assert.equal(keyMove(key("End", { target }), 3, 10, 8), null);
  }
  assert.equal(typing(document.createElement("div")), false);
});

test("the next and the previous error: the nearest, or none", () => {
  const bad = new Set([2, 7]);
  assert.equal(seek(0, 1, 10, (i) => bad.has(i)), 2);
  assert.equal(seek(2, 1, 10, (i) => bad.has(i)), 7);
  assert.equal(seek(7, 1, 10, (i) => bad.has(i)), -1);
  assert.equal(seek(9, -1, 10, (i) => bad.has(i)), 7);
  assert.equal(seek(2, -1, 10, (i) => bad.has(i)), -1);
});

async function mounted() {
  const el = document.createElement("div");
  document.body.append(el);
  const view = mount(el, script(FOUR_ROUNDS));
  await frame();
  return { el, ...view };
}

const press = (node, k, extra = {}) => {
  const ev = new dom.window.KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true, ...extra });
  node.dispatchEvent(ev);
  return ev;
};
const title = (el) => el.querySelector(".tl-detail-title").textContent;

test("on a page: the timeline says where the time went, and its keys move the selection", async () => {
  const { el, dispose } = await mounted();
  const gantt = el.querySelector(".tl-gantt");
  assert.equal(gantt.hidden, false);
  assert.equal(el.querySelector(".tl-gantt-sum").textContent, "13.5 s across 4 rounds: model 9.1 s, tools 4.2 s, paused 200 ms");
  assert.equal(el.querySelector(".tl-gantt-marks").textContent, "slowest: round 3, 6.2 s · 1 failed call (round 2)");
  assert.deepEqual([...el.querySelectorAll(".tl-gantt-label")].map((n) => n.textContent), ["model", "tools", "paused"]);
  assert.ok(gantt.querySelectorAll("*").length < 30, `${gantt.querySelectorAll("*").length} nodes`);
  const plot = el.querySelector(".tl-gantt-plot");
  assert.equal(plot.tabIndex, 0);
  let ev = press(plot, "Home");
  assert.equal(ev.defaultPrevented, true);
  await frame();
  assert.equal(title(el), "Round 1");
  press(plot, "n");
  await frame();
  assert.equal(title(el), "Round 2"); // the failing tool's round
  press(plot, "n");
  await frame();
  assert.equal(el.querySelector(".tl-gantt-note").textContent, "no error after this round");
  assert.equal(title(el), "Round 2");
  press(plot, "End");
  await frame();
  assert.equal(title(el), "Round 4");
  press(plot, "p");
  await frame();
  assert.equal(title(el), "Round 2");
  press(plot, "PageDown");
  await frame();
  assert.equal(title(el), "Round 4");
  // a key the timeline does not use, or one with a modifier, goes on to the notebook
  ev = press(plot, "Enter", { shiftKey: true });
  assert.equal(ev.defaultPrevented, false);
  ev = press(plot, "Home", { shiftKey: true });
  assert.equal(ev.defaultPrevented, false);
  dispose();
});

test("on a page: the round list takes the same keys; a field typed in keeps them", async () => {
  const { el, dispose } = await mounted();
  const list = el.querySelector(".tl-timeline .tl-scroller");
  press(list, "Home");
  await frame();
  assert.equal(title(el), "Round 1");
  press(list, "End");
  await frame();
  assert.equal(title(el), "Round 4");
  press(list, "p");
  await frame();
  assert.equal(title(el), "Round 2");
  const search = el.querySelector(".tl-toolbar input[type=search]");
  const ev = press(search, "End");
  assert.equal(ev.defaultPrevented, false);
  await frame();
  assert.equal(title(el), "Round 2");
  assert.match(list.title, /Home \/ End/);
  dispose();
});

test("on a page: each tool chip says what happened in its tooltip", async () => {
  const { el, dispose } = await mounted();
  const chips = [...el.querySelectorAll(".tl-sum-tools .tl-chip")].map((n) => [n.textContent, n.title]);
  assert.deepEqual(chips, [
    ["a", "ok · 1.0 s"],
    ["churn", "raised KeyError · 500 ms"],
    ["a", "ok · 2.7 s"],
    ["b", "ok · 800 ms"],
  ]);
  dispose();
});

test("on a page: a click on a bar opens its round; between bars, the round under it", async () => {
  const width = Object.getOwnPropertyDescriptor(dom.window.HTMLElement.prototype, "clientWidth");
  Object.defineProperty(dom.window.HTMLElement.prototype, "clientWidth", { configurable: true, get: () => 540 });
  try {
    const { el, dispose } = await mounted();
    const canvas = el.querySelector(".tl-gantt-canvas");
    const click = (t, lane) => canvas.dispatchEvent(new dom.window.MouseEvent("click", { bubbles: true, clientX: (t / 13.5) * 540, clientY: 24 + lane * 22 + 11 }));
    click(5.45, 1); // the failing tool of round 2, in the tools lane
    await frame();
    assert.equal(title(el), "Round 2");
    click(7, 0); // round 3's model call
    await frame();
    assert.equal(title(el), "Round 3");
    click(1, 1); // the tools lane before round 1's tool: round 1's band
    await frame();
    assert.equal(title(el), "Round 1");
    canvas.dispatchEvent(new dom.window.MouseEvent("mousemove", { bubbles: true, clientX: (5.45 / 13.5) * 540, clientY: 24 + 22 + 11 }));
    const tip = el.querySelector(".tl-gantt-tip");
    assert.equal(tip.hidden, false);
    assert.equal(tip.textContent, "Round 2 · churn · 500 ms · raised KeyError");
    dispose();
  } finally {
    if (width) Object.defineProperty(dom.window.HTMLElement.prototype, "clientWidth", width);
  }
});
