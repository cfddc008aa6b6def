// The round list's size (jsdom): as tall as its rows up to nine, a longer run scrolls; the
// figures' columns as wide as the widest figure drawn; chips kept apart from the preview.
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { src } from "./fixtures.mjs";
import { FOUR_ROUNDS, script } from "./run_script.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame", "HTMLElement", "HTMLButtonElement", "getComputedStyle"]) globalThis[name] = dom.window[name];
dom.window.HTMLCanvasElement.prototype.getContext = () => null;
const { mount } = await import(src("debugger.js"));
const { textCh } = await import(src("timeline_rows.js"));
const { createStore, enqueue } = await import(src("store.js"));
const { createView } = await import(src("view.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks
const rounds = (n) => Array.from({ length: n }, (_, i) => ({ call: [i, i + 0.5], tools: i < n - 1 ? [["a", i + 0.5, i + 0.9]] : undefined }));

async function mounted(events) {
  const el = document.createElement("div");
  document.body.append(el);
  const view = mount(el, events);
  await frame();
  return { el, ...view };
}

/** A view of an empty live store, as a kernel's first message leaves it. */
function liveView() {
  const el = document.createElement("div");
  document.body.append(el);
  const s = createStore();
  s.live = true;
  const host = { live: true, pauseOn: () => "off", setPauseOn() {}, control() {}, send() {}, forking: false, canFork: () => false };
  return { el, s, dispose: createView(el, s, host) };
}

test("a figure's width in digits: separators count as digits, a dash and an m as more", () => {
  assert.equal(textCh("1,200 / 60"), 10);
  assert.equal(textCh("$0.0012"), 7);
  assert.equal(textCh("—"), 1.7);
  assert.equal(textCh("10000"), 5);
});

test("the list is as tall as a small run's rows, and scrolls past nine", async () => {
  const four = await mounted(script(FOUR_ROUNDS));
  assert.equal(four.el.querySelector(".tl-timeline .tl-scroller").style.height, "120px"); // 4 rows of 30 px
  four.dispose();
  const forty = await mounted(script(rounds(40)));
  const scroller = forty.el.querySelector(".tl-timeline .tl-scroller");
  assert.equal(scroller.style.height, "270px"); // nine rows, then it scrolls
  assert.equal(forty.el.querySelector(".tl-timeline .tl-spacer").style.height, "1200px");
  // a filter that keeps no round: one row high, saying so
  const search = forty.el.querySelector(".tl-toolbar input[type=search]");
  search.value = "nothing matches this";
  search.dispatchEvent(new dom.window.Event("input", { bubbles: true }));
  await frame(250);
  assert.equal(scroller.style.height, "30px");
  assert.equal(forty.el.querySelector(".tl-empty").textContent, "No round matches.");
  forty.dispose();
});

test("a live list grows with its rounds", async () => {
  const { el, s, dispose } = liveView();
  const events = script(rounds(3), { finished: false });
  const cut = events.findIndex((e) => e.kind === "round_start" && e.round === 2);
  enqueue(s, events.slice(0, cut));
  await frame();
  const scroller = el.querySelector(".tl-timeline .tl-scroller");
  assert.equal(scroller.style.height, "30px");
  enqueue(s, events.slice(cut));
  await frame(250); // a live view draws at most every 150 ms
  assert.equal(scroller.style.height, "90px");
  dispose();
});

test("the figures' columns fit the widest figure drawn; the status word stays as a tooltip", async () => {
  const { el, dispose } = await mounted(script(FOUR_ROUNDS));
  const timeline = el.querySelector(".tl-timeline");
  const tok = [...el.querySelectorAll(".tl-spacer .tl-c-tok")].map((n) => n.textContent);
  assert.deepEqual(tok, ["10 / 2", "10 / 2", "10 / 2", "10 / 2"]);
  assert.equal(timeline.style.getPropertyValue("--tl-tok-ch"), "6");
  assert.equal(timeline.style.getPropertyValue("--tl-tok2-ch"), "2"); // in over out, when very narrow
  const cost = el.querySelector(".tl-spacer .tl-c-cost").textContent;
  assert.equal(timeline.style.getPropertyValue("--tl-cost-ch"), String(textCh(cost)));
  assert.equal(timeline.style.getPropertyValue("--tl-n-ch"), "1");
  const state = el.querySelector(".tl-spacer .tl-c-state");
  assert.equal(state.title, state.textContent);
  // the chips sit in their own box, apart from the preview that gives way first
  const chips = el.querySelector(".tl-spacer .tl-row[data-n='3'] .tl-sum-chips");
  assert.deepEqual([...chips.querySelectorAll(".tl-chip-name")].map((n) => n.textContent), ["a", "b"]);
  assert.equal(el.querySelector(".tl-colhead .tl-c-tok").textContent, "tokens in / out");
  dispose();
});

test("following a live run, the rows of rounds that did not change stay; a changed one is drawn again", async () => {
  const { el, s, dispose } = liveView();
  const events = script(rounds(30), { finished: false });
  const at = (n) => events.findIndex((e) => e.kind === "round_start" && e.round === n);
  enqueue(s, events.slice(0, at(20)));
  await frame();
  const rowOf = (n) => el.querySelector(`.tl-spacer .tl-row[data-n='${n}']`);
  const listed = () => [...el.querySelectorAll(".tl-spacer .tl-row")].map((r) => Number(r.dataset.n));
  const kept = rowOf(15);
  const before = rowOf(18);
  const newest = rowOf(19);
  assert.ok(kept && before && newest);
  assert.equal(newest.querySelector(".tl-c-state").textContent, "ok"); // its tool ended
  assert.ok(newest.classList.contains("tl-selected")); // following: the newest is the one shown
  // round 20 begins: 18's row is not touched (nothing of it changed), 20's is added, and
  // 19's is drawn again, no longer the one shown
  enqueue(s, events.slice(at(20), at(20) + 1));
  await frame(250);
  assert.equal(rowOf(15), kept);
  assert.equal(rowOf(18), before);
  assert.notEqual(rowOf(19), newest);
  assert.ok(!rowOf(19).classList.contains("tl-selected"));
  const twenty = rowOf(20);
  assert.ok(twenty);
  assert.equal(twenty.querySelector(".tl-c-tok").textContent, "—");
  // round 20's reply and tool arrive: its row is drawn anew, the others stay
  enqueue(s, events.slice(at(20) + 1, at(21)));
  await frame(250);
  assert.notEqual(rowOf(20), twenty);
  assert.equal(rowOf(20).querySelector(".tl-c-tok").textContent, "10 / 2");
  assert.equal(rowOf(15), kept);
  assert.equal(rowOf(18), before);
  enqueue(s, events.slice(at(21), at(22)));
  await frame(250);
  // in list order, as many as a draw holds, the newest last
  const ns = listed();
  assert.deepEqual(ns, [...ns].sort((a, b) => a - b));
  assert.equal(ns[ns.length - 1], 21);
  assert.ok(ns.length <= 13);
  // the run ends: the last row says so (the run's state is part of what a row shows)
  enqueue(s, events.slice(at(22)));
  enqueue(s, [{ kind: "loop_finish", run_id: "run-1", round: 30, t: 30, final_text: "done", rounds: 30, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2, cost_usd: "0" }, outcome: "final_answer", messages: [] }]);
  await frame(250);
  assert.deepEqual(listed().slice(-1), [30]);
  assert.equal(rowOf(30).querySelector(".tl-c-state").textContent, "answer");
  dispose();
});
