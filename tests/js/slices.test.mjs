// The page's work in slices: on a page so slow that every step overruns its budget, the
// fold and the draw are cut after each step and go on in the next task, and end exactly as
// a page that did everything at once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { JSDOM } from "jsdom";
import { loadCase, src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame"]) globalThis[name] = dom.window[name];
const { mount } = await import(src("debugger.js"));

const wait = (ms) => new Promise((r) => setTimeout(r, ms));

/** Mount `name` and wait until the page stops changing; its text and the tasks it took. */
async function drawn(name) {
  const el = document.createElement("div");
  document.body.append(el);
  const view = mount(el, loadCase(name));
  let last = "";
  for (let i = 0; i < 100; i++) {
    await wait(30);
    if (el.textContent === last && el.querySelector(".tl-badge")) break;
    last = el.textContent;
  }
  const out = { text: el.textContent, rows: el.querySelectorAll(".tl-row[data-n]").length, badge: el.querySelector(".tl-badge").textContent };
  view.dispose();
  el.remove();
  return out;
}

test("a fold and a draw cut after every step end as one done at once", async () => {
  const whole = await drawn("multi_round");
  assert.equal(whole.badge, "Finished");
  const now = performance.now.bind(performance);
  const timer = globalThis.setTimeout;
  let skew = 0;
  let tasks = 0; // in Node the next task is a timer of 0 ms (in a browser, a MessageChannel)
  performance.now = () => now() + (skew += 20); // every step overruns its 8 ms budget
  globalThis.setTimeout = (fn, ms, ...args) => {
    if (ms === 0) tasks++;
    return timer(fn, ms, ...args);
  };
  try {
    const sliced = await drawn("multi_round");
    assert.ok(tasks >= 8, `the draw went on in ${tasks} more tasks`);
    assert.deepEqual(sliced, whole);
  } finally {
    performance.now = now;
    globalThis.setTimeout = timer;
  }
});
