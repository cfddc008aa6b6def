// The run list: rows folded as Python sends them (_widget/runs.py), ordered newest
// first with nested runs under the run that called them, labelled in the words file's
// words, and drawn (jsdom) as a bounded, clickable list with the header's with-nested spend.
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { loadCase, src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame"]) globalThis[name] = dom.window[name];
const { foldRuns, orderRuns, nestedCount, runName, calledBy, runOutcome, runDot, startTime, runsTitle } = await import(src("run_rows.js"));
const { createStore, receive } = await import(src("store.js"));
const { createView } = await import(src("view.js"));
const { OUTCOME, usd } = await import(src("words.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks

/** A row as Python's row_payload writes it. */
function row(id, extra = {}) {
  return {
    run_id: id,
    parent_run_id: null,
    parent_tool_call_id: null,
    parent_tool_name: null,
    name: null,
    tags: [],
    source: "loop",
    status: "finished",
    outcome: "final_answer",
    rounds: 2,
    input_tokens: 100,
    output_tokens: 10,
    cost_usd: "0.0001",
    total_input_tokens: 100,
    total_output_tokens: 10,
    total_cost_usd: "0.0001",
    started_at: "2025-01-01T00:00:00+00:00",
    duration_s: 1.5,
    offset_s: 0,
    spans: [],
    spans_left_out: 0,
    ...extra,
  };
}

const holder = () => ({ runs: new Map(), runsLeftOut: 0, runsPinned: null, runsVersion: 0 });
const kid = (id, parent, tool, extra = {}) => row(id, { parent_run_id: parent, parent_tool_call_id: `call-${id}`, parent_tool_name: tool, ...extra });

test("rows fold in: a reset replaces them all, changes replace a row, dropped runs leave", () => {
  const s = holder();
  foldRuns(s, { reset: true, rows: [row("a"), row("b")], left_out: 0, dropped: [], pinned: null });
  foldRuns(s, { reset: false, rows: [row("b", { rounds: 5 }), row("c")], left_out: 0, dropped: [], pinned: "a" });
  assert.deepEqual([...s.runs.keys()], ["a", "b", "c"]); // start order kept
  assert.equal(s.runs.get("b").rounds, 5);
  assert.equal(s.runsPinned, "a");
  foldRuns(s, { reset: false, rows: [], left_out: 1, dropped: ["a"] });
  assert.deepEqual([...s.runs.keys()], ["b", "c"]);
  assert.equal(s.runsLeftOut, 1);
  assert.equal(s.runsPinned, "a"); // not said again: unchanged
  foldRuns(s, { reset: true, rows: [row("z")], left_out: 3, dropped: [], pinned: null });
  assert.deepEqual([...s.runs.keys()], ["z"]);
  assert.equal(s.runsVersion, 4);
});

test("the newest top-level run comes first, each nested run under its caller in start order", () => {
  const s = holder();
  const rows = [row("a"), kid("a1", "a", "research"), kid("a2", "a", "write"), kid("a1x", "a1", "search"), row("b"), kid("orphan", "gone", "lost"), row("c")];
  foldRuns(s, { reset: true, rows, left_out: 10 });
  const order = orderRuns(s.runs, s.runsLeftOut);
  assert.deepEqual(
    order.map((e) => [e.row.run_id, e.depth, e.number]),
    [
      ["c", 0, 17],
      ["orphan", 0, 16], // its caller is not kept: a top-level run of its own
      ["b", 0, 15],
      ["a", 0, 11],
      ["a1", 1, 12],
      ["a1x", 2, 14],
      ["a2", 1, 13],
    ],
  );
  assert.equal(nestedCount(s.runs, "a"), 3);
  assert.equal(nestedCount(s.runs, "a1"), 1);
  assert.equal(nestedCount(s.runs, "b"), 0);
});

test("rows naming each other as callers still show, once each", () => {
  const s = holder();
  foldRuns(s, { reset: true, rows: [kid("x", "y", "t"), kid("y", "x", "t"), kid("self", "self", "t")], left_out: 0 });
  const order = orderRuns(s.runs);
  assert.deepEqual(order.map((e) => e.row.run_id).sort(), ["self", "x", "y"]);
  assert.equal(nestedCount(s.runs, "x"), 1); // never loops
});

test("a run reads by its name, else its caller's tool, else its number; outcomes in words", () => {
  assert.equal(runName({ row: row("a", { name: "weekly report" }), depth: 0, number: 3 }), "weekly report");
  assert.equal(runName({ row: row("a"), depth: 0, number: 1234 }), "run 1,234");
  const nested = { row: kid("k", "a", "research"), depth: 1, number: 2 };
  assert.equal(runName(nested), "research (nested run)");
  assert.equal(calledBy(nested), "called by tool `research`");
  assert.equal(calledBy({ row: row("a"), depth: 0, number: 1 }), "");
  assert.equal(runOutcome(row("a")), OUTCOME.final_answer);
  assert.equal(runOutcome(row("a", { outcome: null, status: "running" })), "Running");
  // a USD stop: its outcome's words and the header's warning dot, never an error
  const stopped = row("a", { status: "failed", outcome: "usd_budget_exhausted" });
  assert.equal(runOutcome(stopped), OUTCOME.usd_budget_exhausted);
  assert.equal(runDot(stopped), "warn");
  assert.equal(runDot(row("a", { status: "failed", outcome: "failed" })), "error");
  assert.equal(runsTitle(1000, 39), "1,000 runs (39 earlier not kept)");
  const today = new Date(2025, 0, 1, 12, 0, 0);
  assert.equal(startTime(new Date(2025, 0, 1, 9, 5, 7).toISOString(), today), "09:05:07");
  assert.equal(startTime(new Date(2025, 6, 4, 23, 10, 0).toISOString(), today), "07-04 23:10");
  assert.equal(startTime(new Date(2024, 11, 31, 23, 0, 0).toISOString(), today), "2024-12-31");
  assert.equal(startTime(null, today), "—");
  assert.equal(startTime("not a time", today), "—");
});

// -- the list on a page -------------------------------------------------------------
function host(extra = {}) {
  const calls = { show: [], compare: [] };
  return {
    calls,
    host: {
      live: true,
      pauseOn: () => "off",
      setPauseOn() {},
      control() {},
      send() {},
      forking: false,
      canFork: () => false,
      showRun: (id) => calls.show.push(id),
      compare: (a, b) => calls.compare.push([a, b]),
      ...extra,
    },
  };
}

async function page(rows, { events = [], h = host(), pinned = null, leftOut = 0 } = {}) {
  const el = document.createElement("div");
  document.body.append(el);
  const s = createStore();
  s.live = true;
  receive(s, { type: "events", epoch: 1, first: 0, reset: true, events, now: null, control: null, runs: { reset: true, rows, left_out: leftOut, dropped: [], pinned } });
  const dispose = createView(el, s, h.host);
  await frame();
  return { el, s, dispose, calls: h.calls };
}

const texts = (el, selector) => [...el.querySelectorAll(selector)].map((n) => n.textContent);
const click = (node) => node.dispatchEvent(new dom.window.MouseEvent("click", { bubbles: true }));

test("one run has no list; two do, newest first, the shown run marked, nested runs labelled", async () => {
  const events = loadCase("single_round");
  const shown = events[0].run_id;
  const one = await page([row(shown)], { events });
  assert.equal(one.el.querySelector(".tl-runs").hidden, true);
  one.dispose();
  const rows = [row(shown, { name: "boss", total_input_tokens: 400, total_output_tokens: 40, total_cost_usd: "0.0003" }), kid("k1", shown, "research", { name: null, input_tokens: 300, output_tokens: 30, cost_usd: "0.0002" }), row("later", { name: "later run", outcome: "failed", status: "failed" })];
  const { el, dispose, calls } = await page(rows, { events });
  assert.equal(el.querySelector(".tl-runs").hidden, false);
  assert.equal(el.querySelector(".tl-runs-title").textContent, "3 runs");
  assert.deepEqual(texts(el, ".tl-spacer > .tl-run .tl-r-label"), ["later run", "boss", "research (nested run)"]);
  const nested = el.querySelector(".tl-run[data-run='k1']");
  assert.match(nested.textContent, /called by tool `research`/);
  assert.equal(el.querySelector(".tl-run.tl-selected").dataset.run, shown);
  assert.equal(el.querySelector(".tl-run[data-run='later'] .tl-r-outcome").textContent, OUTCOME.failed);
  // the header: the run's own spend, then with its nested run
  const nestedSpend = el.querySelector(".tl-total-nested");
  assert.equal(nestedSpend.textContent.replace(/\s+/g, " "), `with 1 nested run:440 tokens, ${usd("0.0003")}input 400 · output 40`);
  // a click shows a run; "Newest" follows the newest again (it is pressed while following)
  click(el.querySelector(".tl-run[data-run='later'] .tl-r-label"));
  assert.deepEqual(calls.show, ["later"]);
  const newest = [...el.querySelectorAll(".tl-runs-head button")].find((b) => b.textContent === "Newest");
  assert.equal(newest.disabled, true);
  assert.equal(newest.getAttribute("aria-pressed"), "true");
  dispose();
});

test("two ticked runs are compared; without compare on the page there is nothing to tick", async () => {
  const { el, dispose, calls } = await page([row("a"), row("b"), row("c")], { pinned: "a" });
  const compare = [...el.querySelectorAll(".tl-runs-head button")].find((b) => b.textContent === "Compare");
  assert.equal(compare.hidden, false);
  assert.equal(compare.disabled, true);
  for (const id of ["c", "a", "b"]) {
    click(el.querySelector(`.tl-run[data-run='${id}'] input`));
    await frame();
  }
  assert.equal(compare.disabled, false);
  assert.deepEqual(calls.show, []); // ticking never shows a run
  click(compare);
  assert.deepEqual(calls.compare, [["a", "b"]]); // the last two ticked, in the order ticked
  const newest = [...el.querySelectorAll(".tl-runs-head button")].find((b) => b.textContent === "Newest");
  assert.equal(newest.disabled, false); // a run is pinned: "Newest" can follow again
  click(newest);
  assert.deepEqual(calls.show, [null]);
  dispose();
  const bare = await page([row("a"), row("b")], { h: host({ compare: undefined }) });
  const button = [...bare.el.querySelectorAll(".tl-runs-head button")].find((b) => b.textContent === "Compare");
  assert.equal(button.hidden, true);
  assert.equal(bare.el.querySelectorAll(".tl-run input").length, 0);
  bare.dispose();
});

test("a thousand runs draw a dozen rows, and a hostile name stays text", async () => {
  const xss = "<img src=x onerror=alert(1)>";
  const rows = Array.from({ length: 1000 }, (_, i) => (i % 25 === 24 ? kid(`r${i}`, `r${i - 1}`, xss) : row(`r${i}`, { name: i === 998 ? xss : null })));
  const { el, dispose } = await page(rows, { leftOut: 39 });
  const list = el.querySelector(".tl-runs");
  assert.ok(list.querySelectorAll("*").length < 300, `${list.querySelectorAll("*").length} nodes`);
  assert.ok(el.querySelectorAll("*").length < 3000);
  assert.equal(el.querySelector(".tl-runs-title").textContent, "1,000 runs (39 earlier not kept)");
  assert.equal(el.querySelector(".tl-spacer > .tl-run .tl-r-label").textContent, xss);
  assert.equal(el.querySelectorAll("img, script").length, 0);
  assert.equal(el.querySelector(".tl-runs-scroller .tl-spacer").style.height, `${1000 * 28}px`);
  dispose();
});

test("a refused pick says why in the list", async () => {
  const { el, s, dispose } = await page([row("a"), row("b")]);
  s.runsNote = "this debugger keeps no run 'x'";
  s.version++;
  for (const fn of s.listeners) fn();
  await frame(250); // redraws driven by changes wait their turn
  assert.match(el.querySelector(".tl-runs-head").textContent, /keeps no run 'x'/);
  dispose();
});

test("showing another run of the same shape draws that run's rounds, not the last one's", async () => {
  const events = loadCase("single_round");
  const as = (id, text) => events.map((e) => ({ ...e, run_id: id, ...(e.kind === "model_call" && e.text ? { text } : {}), ...(e.kind === "loop_finish" ? { final_text: text } : {}) }));
  const { el, s, dispose } = await page([row("A"), row("B")], { events: as("A", "the first answer") });
  await frame(250);
  assert.match(el.querySelector(".tl-detail").textContent, /the first answer/);
  receive(s, { type: "events", epoch: 2, first: 0, reset: true, events: as("B", "the second answer"), now: null, control: null, runs: { reset: false, rows: [], left_out: 0, dropped: [], pinned: "B" } });
  await frame(250);
  const detail = el.querySelector(".tl-detail").textContent;
  assert.match(detail, /the second answer/);
  assert.doesNotMatch(detail, /the first answer/);
  assert.equal(el.querySelector(".tl-run.tl-selected").dataset.run, "B");
  assert.equal(el.querySelector(".tl-run.tl-selected .tl-r-shown").textContent, "pinned");
  dispose();
});

test("a row that changed is redrawn alone; the others keep their elements", async () => {
  const { el, s, dispose } = await page([row("a"), row("b"), row("c", { status: "running", outcome: null })]);
  const before = new Map([...el.querySelectorAll(".tl-spacer > .tl-run")].map((n) => [n.dataset.run, n]));
  receive(s, { type: "events", epoch: 1, first: 0, reset: false, events: [], now: null, control: null, runs: { reset: false, rows: [row("c", { rounds: 7 })], left_out: 0, dropped: [], pinned: null } });
  await frame(250);
  const after = new Map([...el.querySelectorAll(".tl-spacer > .tl-run")].map((n) => [n.dataset.run, n]));
  assert.equal(after.get("a"), before.get("a"));
  assert.equal(after.get("b"), before.get("b"));
  assert.notEqual(after.get("c"), before.get("c"));
  assert.equal(after.get("c").querySelector(".tl-r-rounds").textContent, "7");
  assert.deepEqual([...after.keys()], ["c", "b", "a"]);
  dispose();
});

test("checks a person gave: each row's mark, a failed check's round marked, hostile evidence stays text", async () => {
  const events = loadCase("single_round");
  const shown = events[0].run_id;
  const failed = { passed: false, total: 2, failed: 1, failures: [{ check: "max_tool_rounds(0)", round: 1, expected: "at most 0 tool rounds", seen: "<img src=x onerror=alert(1)> 1 tool round" }] };
  const rows = [row(shown, { checks: failed }), row("other", { checks: { passed: true, total: 2, failed: 0, failures: [] } }), row("unjudged")];
  const { el, s, dispose } = await page(rows, { events, h: host({ forking: true }) });
  await frame(250);
  const mark = el.querySelector(`.tl-run[data-run='${shown}'] .tl-check`);
  assert.equal(mark.textContent, "1/2 checks failed");
  assert.match(mark.title, /^max_tool_rounds\(0\): expected at most 0 tool rounds; seen <img/);
  assert.equal(el.querySelector(".tl-run[data-run='other'] .tl-check").textContent, "2/2 checks");
  assert.equal(el.querySelector(".tl-run[data-run='unjudged'] .tl-check"), null);
  assert.equal(el.querySelector("img"), null); // evidence is text, never markup
  // the round the evidence names carries the mark; no other round does
  const marked = [...el.querySelectorAll(".tl-timeline .tl-row")].filter((r) => r.querySelector(".tl-check"));
  assert.deepEqual(marked.map((r) => r.dataset.n), ["1"]);
  // the row judged again (checks changed): the round's mark goes
  receive(s, { type: "events", epoch: 1, first: events.length, reset: false, events: [], now: null, control: null, runs: { reset: false, rows: [row(shown, { checks: { passed: true, total: 1, failed: 0, failures: [] } })], left_out: 0, dropped: [] } });
  await frame(250);
  assert.equal(el.querySelectorAll(".tl-timeline .tl-row .tl-check").length, 0);
  assert.equal(el.querySelector(`.tl-run[data-run='${shown}'] .tl-check`).textContent, "1/1 checks");
  dispose();
});

test("Save as test asks Python for the run shown and says what it wrote, or why not", async () => {
  const events = loadCase("single_round");
  const shown = events[0].run_id;
  const sent = [];
  const { el, s, dispose } = await page([row(shown), row("other")], { events, h: host({ forking: true, send: (m) => sent.push(m) }) });
  await frame(250);
  const save = [...el.querySelectorAll(".tl-detail-head button")].find((b) => b.textContent === "Save as test");
  assert.ok(save && !save.hidden);
  click(save);
  await frame();
  const asked = sent.find((m) => m.type === "save_test");
  assert.equal(asked.run_id, shown);
  receive(s, { type: "events", epoch: 1, first: events.length, reset: false, events: [], now: null, control: { answer: { request: asked.request, action: "save_test", ok: false, reason: "path", message: "tests/test_run_x.py exists" }, answers: [] } });
  await frame(250);
  assert.match(el.querySelector(".tl-detail").textContent, /Cannot save it as a test \(path\): tests\/test_run_x\.py exists/);
  dispose();
});
