// Two runs side by side (compare.js), drawn from comparisons Python wrote (jskit's
// comparison_cases): what changed is marked, text diffs are spans, hostile text stays text.
import assert from "node:assert/strict";
import { test } from "node:test";
import { JSDOM } from "jsdom";
import { loadCase, src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame"]) globalThis[name] = dom.window[name];
const { comparisonView, diffText, createCompare } = await import(src("compare.js"));
const { createStore } = await import(src("store.js"));

function drawn(name, options) {
  const el = comparisonView(loadCase(name), options);
  document.body.append(el);
  return el;
}

const texts = (el, selector) => [...el.querySelectorAll(selector)].map((n) => n.textContent);

test("a call that became another tool's is marked changed, both sides shown", () => {
  const el = drawn("compare_changed_call");
  assert.equal(el.querySelector(".tl-cmp-head .tl-block-title").textContent, "Comparing A with B");
  assert.equal(el.querySelector(".tl-cmp-verdict").textContent, "1 round of 3 differs.");
  const round = el.querySelector(".tl-cmp-round");
  assert.equal(round.dataset.round, "2");
  assert.deepEqual(texts(round, ".tl-cmp-rhead .tl-mark"), ["read_log changed", "reply changed"]);
  assert.deepEqual(texts(round, ".tl-cmp-span .tl-mark"), ["changed: another tool"]);
  assert.match(round.querySelector(".tl-mark-changed").className, /tl-chip/);
  const [a, b] = [...round.querySelectorAll(".tl-cmp-call")].map((n) => n.querySelector(".tl-chip").textContent);
  assert.deepEqual([a, b], ["read_log", "open_ticket"]);
  assert.ok(round.querySelector(".tl-cmp-cell.tl-cmp-a").textContent.includes('{"path": "app.log"}'));
  assert.ok(round.querySelector(".tl-cmp-cell.tl-cmp-b").textContent.includes("ticket opened: disk full"));
  // the rounds that did the same are one line each here (round 1, round 3)
  assert.deepEqual(texts(el, ".tl-cmp-same .tl-strong"), ["Round 1 the same", "Round 3 the same"]);
  // both runs' totals head it, and the change
  const cells = texts(el, ".tl-cmp tr:nth-child(5) td");
  assert.equal(cells[0], "tokens");
  assert.equal(cells[3], "±0");
  el.remove();
});

test("rounds that did the same say what each run spent when it differs", () => {
  const el = drawn("compare_same_spent_differently");
  assert.deepEqual(texts(el, ".tl-cmp-same .tl-strong"), ["Rounds 1–4 the same"]);
  const said = el.querySelector(".tl-cmp-same .tl-meta").textContent;
  assert.ok(said.endsWith("A: 60 tokens, B: 300 tokens"), said);  // the page's labels
  assert.ok(!said.includes("each run"), said);
  el.remove();
});

test("a reply's text diff shows deleted and inserted spans, the rest as text", () => {
  const el = drawn("compare_changed_call");
  const replies = [...el.querySelectorAll(".tl-cmp-round .tl-cmp-cell")].filter((n) => n.querySelector(".tl-cmp-what")?.textContent === "reply");
  const [a, b] = replies.map((n) => n.querySelector("pre"));
  assert.equal(a.textContent, "I will read the log.");
  assert.equal(b.textContent, "I will open a ticket.");
  assert.deepEqual(texts(a, ".tl-del"), ["read the log."]);
  assert.deepEqual(texts(b, ".tl-ins"), ["open a ticket."]);
  assert.equal(a.querySelectorAll(".tl-ins").length, 0);
  assert.equal(a.firstChild.nodeType, dom.window.Node.TEXT_NODE); // "I will " is plain text
  el.remove();
});

test("diffText makes one node per part, and never parses markup", () => {
  const ops = [["equal", "<b>same</b> ", "<b>same</b> "], ["replace", "<img src=x onerror=alert(1)>", "<script>alert(1)</script>"], ["insert", "", " added"], ["delete", " gone", ""]];
  const a = diffText(ops, "a");
  const b = diffText(ops, "b");
  assert.equal(a.textContent, "<b>same</b> <img src=x onerror=alert(1)> gone");
  assert.equal(b.textContent, "<b>same</b> <script>alert(1)</script> added");
  assert.deepEqual(texts(a, ".tl-del"), ["<img src=x onerror=alert(1)>", " gone"]);
  assert.deepEqual(texts(b, ".tl-ins"), ["<script>alert(1)</script>", " added"]);
  assert.equal(a.querySelectorAll("b, img, script").length + b.querySelectorAll("b, img, script").length, 0);
});

test("hostile text from a run stays text everywhere in the comparison", () => {
  const el = drawn("compare_hostile", { close: () => {}, swap: () => {} });
  const shown = el.textContent;
  assert.ok(shown.includes("<img src=x onerror=alert(1)>"));
  assert.ok(shown.includes("<script>alert(1)</script>"));
  assert.ok(shown.includes("chars)"), "a long result is clipped with the one marker");
  assert.equal(el.querySelectorAll("img, script, iframe, svg, style, b, a[href]").length, 0);
  for (const node of el.querySelectorAll("*")) {
    for (const attr of node.getAttributeNames()) assert.ok(!attr.startsWith("on"), `${node.tagName} has ${attr}`);
  }
  assert.deepEqual(texts(el, ".tl-cmp-head .tl-btn"), ["Swap sides", "Close"]);
  el.remove();
});

test("a long comparison draws ten rounds that differ, and more on request", () => {
  const el = drawn("compare_many");
  assert.equal(el.querySelectorAll(".tl-cmp-round").length, 10);
  const more = el.querySelector(".tl-cmp-rest .tl-btn");
  assert.equal(more.textContent, "Show 10 more rounds that differ (15 left)");
  more.click();
  assert.equal(el.querySelectorAll(".tl-cmp-round").length, 20);
  el.querySelector(".tl-cmp-rest .tl-btn").click();
  assert.equal(el.querySelectorAll(".tl-cmp-round").length, 25);
  assert.equal(el.querySelector(".tl-cmp-rest .tl-btn"), null);
  assert.deepEqual(texts(el, ".tl-cmp-same .tl-strong"), ["Round 26 the same"]);
  el.remove();
});

test("the widget's part: drawn when the store holds one, closed at once, asks to swap", async () => {
  const s = createStore();
  const asked = [];
  let closed = 0;
  const host = { compare: (a, b) => asked.push([a, b]), closeComparison: () => closed++ };
  const ctx = { s, host, redraw: () => part.draw(), live: [], liveRows: [], liveDetail: [], ask() {} };
  const part = createCompare(ctx);
  const box = part.nodes.compareBox;
  part.draw();
  assert.equal(box.hidden, true);
  s.comparison = loadCase("compare_changed_call");
  part.draw();
  assert.equal(box.hidden, false);
  assert.equal(box.getAttribute("aria-label"), "Comparison of two runs");
  box.querySelector(".tl-cmp-swap").click();
  assert.deepEqual(asked, [[s.comparison.b.run_id, s.comparison.a.run_id]]);
  box.querySelector(".tl-cmp-close").click();
  assert.equal(closed, 1);
  assert.equal(box.hidden, true);
  s.ui.cmpMsg = { state: "error", text: "Cannot compare them (unknown_run): no run 'x'" };
  part.draw();
  assert.equal(box.hidden, false);
  assert.equal(box.querySelector(".tl-cmp-msg").textContent, "Cannot compare them (unknown_run): no run 'x'");
});
