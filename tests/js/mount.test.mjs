// A finished run mounted on a page (jsdom), as the HTML report and the snapshot do it.
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { loadCase, src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame"]) globalThis[name] = dom.window[name];
const { mount } = await import(src("debugger.js"));
const { usd } = await import(src("words.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks

async function mounted(name, options) {
  const el = document.createElement("div");
  document.body.append(el);
  const events = loadCase(name);
  const view = mount(el, events, options);
  await frame();
  return { el, events, ...view };
}

const text = (el, selector) => el.querySelector(selector).textContent;

test("the header of a finished run: status, outcome, rounds and totals", async () => {
  const { el, events, dispose } = await mounted("multi_round");
  assert.equal(text(el, ".tl-badge"), "Finished");
  assert.match(el.querySelector(".tl-badge").className, /tl-b-answer/);
  assert.equal(text(el, ".tl-activity .tl-strong"), "Answered: ");
  assert.equal(text(el, ".tl-activity .tl-final"), "Final answer two rounds");
  // two tool rounds, then the answering call: three model calls
  assert.equal(text(el, ".tl-head .tl-meta"), "2 tool rounds, 3 model calls (at most 10 rounds)");
  const end = events[events.length - 1];
  const totals = [...el.querySelectorAll(".tl-total-value")].map((n) => n.textContent);
  // calls 1..3 of a catalog script: 10 + 2n input and 5 + n output tokens each
  assert.deepEqual(totals, ["42 tokens", "21 tokens", usd(end.usage.cost_usd)]);
  assert.equal(end.usage.input_tokens, 42);
  assert.equal(el.querySelectorAll(".tl-row[data-n]").length, 3);
  assert.equal(text(el, ".tl-toolbar .tl-meta"), "3 rounds");
  assert.equal(el.querySelector(".tl-controls").hidden, true); // a static page has no controls
  dispose();
  assert.equal(el.childNodes.length, 0);
});

test("a failed run says so, with its error", async () => {
  const { el, dispose } = await mounted("model_exception", { note: "a saved run" });
  assert.equal(text(el, ".tl-badge"), "Failed");
  assert.equal(el.querySelector(".tl-failure").hidden, false);
  assert.match(text(el, ".tl-failure .tl-strong"), /^The run failed after \d+ rounds?$/);
  assert.equal(text(el, ".tl-note"), "a saved run");
  dispose();
});

test("a hostile string from a tool is text, never an element", async () => {
  const { el, dispose } = await mounted("hostile_tools");
  const rows = el.querySelectorAll(".tl-row[data-n]");
  rows[0].dispatchEvent(new dom.window.MouseEvent("click", { bubbles: true }));
  await frame();
  for (const b of el.querySelectorAll(".tl-toggle")) if (b.textContent === "Show") b.click();
  const shown = el.textContent;
  assert.ok(shown.includes("<img src=x onerror=alert(1)>"), "the string is shown");
  assert.ok(shown.includes("<script>alert(1)</script>"));
  assert.equal(el.querySelectorAll("img, script, iframe, svg, style, b, a[href]").length, 0);
  for (const node of el.querySelectorAll("*")) {
    for (const attr of node.getAttributeNames()) assert.ok(!attr.startsWith("on"), `${node.tagName} has ${attr}`);
  }
  assert.deepEqual(
    [...el.querySelectorAll(".tl-sum-tools .tl-chip")].map((n) => [n.className, n.textContent]),
    [
      ["tl-chip tl-chip-success", "hostile"],
      ["tl-chip tl-chip-error", "boom"],
      ["tl-chip tl-chip-error", "constructor"],
      ["tl-chip tl-chip-error", "hostile"],
    ],
  );
  dispose();
});

// escape.py's BIDI_CONTROLS: the explicit embeddings, overrides and isolates, and the marks
const BIDI = /[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/;

test("a bidirectional control shows as its code in every text and tooltip, never obeyed", async () => {
  const { el, events, dispose } = await mounted("bidi_text");
  el.querySelector(".tl-row[data-n]").dispatchEvent(new dom.window.MouseEvent("click", { bubbles: true }));
  await frame();
  for (const b of el.querySelectorAll(".tl-toggle")) if (b.textContent === "Show") b.click();
  await frame();
  const shown = el.textContent;
  assert.ok(!BIDI.test(shown), JSON.stringify(shown.match(new RegExp(`.{0,30}${BIDI.source}.{0,30}`, "u"))));
  for (const node of el.querySelectorAll("*")) {
    for (const attr of ["title", "aria-label"]) {
      const value = node.getAttribute(attr) || "";
      assert.ok(!BIDI.test(value), `${node.tagName} ${attr}: ${JSON.stringify(value)}`);
    }
  }
  // the name a person reads is the one the run used, its override shown
  assert.ok(shown.includes("invoice_\\u202efdp.exe"), "the tool's name, its code shown");
  assert.ok(shown.includes("model invoice_\\u202efdp.exe"), "the model's name");
  assert.ok(shown.includes("all \\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\\u200e\\u200f\\u061c end"));
  // the data keeps them: the fold (and what Copy copies) has the text as it was
  assert.ok(JSON.stringify(events).includes("invoice_\u202efdp.exe"));
  dispose();
});

test("estimated counts say so in the words file's words", async () => {
  const { el, events, dispose } = await mounted("estimated_counts");
  const { USAGE } = await import(src("words.js"));
  assert.equal(events[events.length - 1].usage.estimated, true);
  assert.ok(USAGE.estimated, "the words file has the words");
  assert.equal(text(el, ".tl-total-estimated"), USAGE.estimated);
  assert.equal(el.querySelector(".tl-total-estimated").title, USAGE.estimated_hint);
  const exact = await mounted("single_round");
  assert.equal(exact.el.querySelector(".tl-total-estimated"), null);
  exact.dispose();
  dispose();
});

test("a tool's image reads as its words, in its result and in what the model was sent", async () => {
  const { el, dispose } = await mounted("tool_blocks");
  for (const n of [1, 2]) {
    el.querySelector(`.tl-row[data-n='${n}']`).dispatchEvent(new dom.window.MouseEvent("click", { bubbles: true }));
    await frame();
    for (const b of el.querySelectorAll(".tl-toggle")) if (b.textContent === "Show") b.click();
    await frame();
    const shown = el.textContent;
    assert.ok(shown.includes("[image: image/png, 12 KB]"), `round ${n} says the image in words`);
    assert.ok(shown.includes("<img src=x onerror=alert(1)>"), `round ${n} shows the tool's text as text`);
    assert.ok(!shown.includes("iVBORw0KGgo"), `round ${n} shows no base64`);
    assert.ok(!shown.includes("lc_"), `round ${n} shows no made-up block id`);
  }
  const sent = [...el.querySelectorAll(".tl-msg.tl-role-tool pre")].map((p) => p.textContent);
  assert.ok(sent.some((t) => t.endsWith("\n[image: image/png, 12 KB]")), "the tool message sent to the model");
  assert.equal(el.querySelectorAll("img, script").length, 0);
  dispose();
});
