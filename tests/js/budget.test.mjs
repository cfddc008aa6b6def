// A run the USD limit stopped, mounted on a page (jsdom): its status word, how far it got
// and what never ran (from its events), why the spend passed the limit, and where the gate
// tripped (marked, never as the round's error).
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { loadCase, src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame"]) globalThis[name] = dom.window[name];
const { mount } = await import(src("debugger.js"));
const { STATUS, BUDGET_STOP } = await import(src("words.js"));
const { overshoot } = await import(src("budget.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks
const MID_RUN = "Stopped by the USD limit after 4 paid calls; round 4's 2 tool calls did not run";

async function mounted(name) {
  const el = document.createElement("div");
  document.body.append(el);
  const view = mount(el, loadCase(name));
  await frame();
  return { el, ...view };
}

const text = (el, selector) => el.querySelector(selector).textContent;

test("a USD stop has its own status word, not Failed", async () => {
  const { el, dispose } = await mounted("usd_stop_mid_run");
  const badge = el.querySelector(".tl-badge");
  assert.equal(badge.textContent, "USD limit reached");
  assert.equal(STATUS.usd_budget_exhausted, "USD limit reached");
  assert.match(badge.className, /tl-b-warn/);
  assert.doesNotMatch(badge.className, /tl-b-error/);
  dispose();
});

test("a USD stop says how many calls were paid for and which round's tools did not run", async () => {
  const { el, dispose } = await mounted("usd_stop_mid_run");
  assert.equal(text(el, ".tl-activity .tl-strong"), MID_RUN);
  const box = el.querySelector(".tl-failure");
  assert.equal(box.hidden, false);
  assert.equal(text(box, ".tl-strong"), MID_RUN);
  assert.match(box.className, /tl-budget-box/);
  assert.doesNotMatch(box.className, /tl-error-box/);
  assert.ok(!el.textContent.includes("after 3 rounds"));
  dispose();
});

test("each way a USD stop ends reads from its events", async () => {
  for (const [name, said] of [
    ["usd_budget", "Stopped by the USD limit after 2 paid calls; round 2's reply was not used"],
    ["pruning_skipped_after_budget", "Stopped by the USD limit after 1 paid call; round 1's tool call did not run"],
  ]) {
    const { el, dispose } = await mounted(name);
    assert.equal(text(el, ".tl-failure .tl-strong"), said, name);
    dispose();
  }
});

test("a gauge over its limit says why, beside the figure", async () => {
  const { el, dispose } = await mounted("usd_stop_mid_run");
  const usdGauge = [...el.querySelectorAll(".tl-gauge")].find((g) => g.textContent.startsWith("USD limit"));
  assert.ok(usdGauge);
  assert.match(usdGauge.textContent, /\(123\.1%\)/);
  assert.equal(text(usdGauge, ".tl-gauge-over"), `over the limit by 23.1%: ${BUDGET_STOP.overshoot}`);
  assert.ok(usdGauge.title.includes(BUDGET_STOP.overshoot));
  // a gauge within its limit says nothing of the kind
  const { el: other, dispose: done } = await mounted("multi_round");
  assert.equal(other.querySelector(".tl-gauge-over"), null);
  done();
  assert.equal(overshoot(100, 100), null);
  assert.equal(overshoot(126, 100), `over the limit by 26.0%: ${BUDGET_STOP.overshoot}`);
  dispose();
});

test("the round where the gate tripped is marked in the warning style, never as an error", async () => {
  const { el, dispose } = await mounted("usd_budget");
  const last = el.querySelector(".tl-row[data-n='2']");
  const chips = [...last.querySelectorAll(".tl-chip")].map((c) => [c.className, c.textContent]);
  assert.deepEqual(chips, [["tl-chip tl-chip-gate", "USD limit reached"]]);
  assert.equal(last.querySelectorAll(".tl-chip-error, .tl-dot.tl-error").length, 0);
  assert.equal(text(last, ".tl-c-state"), "answer"); // its call answered; the limit stopped the run
  last.dispatchEvent(new dom.window.MouseEvent("click", { bubbles: true }));
  await frame();
  const gates = el.querySelector(".tl-gates");
  assert.match(gates.textContent, /USD limit, checked after the model call: \$0\.0000117 of \$0\.00000855, limit reached/);
  assert.ok(gates.textContent.includes(`over the limit by 36.8%: ${BUDGET_STOP.overshoot}`));
  assert.equal(gates.querySelectorAll(".tl-dot.tl-error").length, 0);
  dispose();
});
