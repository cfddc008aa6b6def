// The whole-run timeline's layout: its lanes and bars, where the time went, the slowest
// round, bars narrower than a pixel merged per column, nested runs' lanes and offsets.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadCase, src } from "./fixtures.mjs";
import { FOUR_ROUNDS, script } from "./run_script.mjs";

const { fold } = await import(src("fold.js"));
const { createStore } = await import(src("store.js"));
const data = { ...(await import(src("gantt_data.js"))), ...(await import(src("gantt_cache.js"))) };
const { hitCell, pack, scaleOf, ticks, tracksOf } = await import(src("gantt_pack.js"));

function storeOf(events) {
  const s = createStore();
  for (const e of events) fold(s.run, e);
  return s;
}

const spans = (items) => items.map((it) => [it.round, it.label, it.t0, it.t1, it.failed]);

test("one lane per kind: every model call, tool and pause of every round, on the run's clock", () => {
  const s = storeOf(script(FOUR_ROUNDS));
  const lanes = data.runItems(data.createCache(), s);
  assert.deepEqual(spans(lanes.model), [
    [1, "model call", 0, 2, false],
    [2, "model call", 3.2, 5.2, false],
    [3, "model call", 5.7, 9.2, false],
    [4, "model call", 11.9, 13.5, false],
  ]);
  assert.deepEqual(spans(lanes.tool), [
    [1, "a", 2, 3, false],
    [2, "churn", 5.2, 5.7, true],
    [3, "a", 9.2, 11.9, false],
    [3, "b", 9.2, 10, false],
  ]);
  assert.equal(lanes.tool[1].said, "raised KeyError");
  assert.deepEqual(spans(lanes.pause), [[2, "paused before the model call", 3, 3.2, false]]);
  assert.deepEqual(lanes.pruning, []);
});

test("where the time went, and the slowest round (its own time, side-by-side tools once)", () => {
  const s = storeOf(script(FOUR_ROUNDS));
  const cache = data.createCache();
  data.runItems(cache, s);
  const split = data.timeSplit(cache, s);
  assert.equal(data.splitText(s, split), "13.5 s across 4 rounds: model 9.1 s, tools 4.2 s, paused 200 ms");
  const slow = data.slowestRound(cache, s);
  assert.equal(slow.round.n, 3);
  assert.ok(Math.abs(slow.time - 6.2) < 1e-9);
  assert.deepEqual([slow.t0, slow.t1], [5.7, 11.9]);
  // time nothing accounts for is said as "other" once it is worth a word
  const gap = storeOf(script([{ call: [0, 1] }, { call: [5, 6] }]));
  const again = data.createCache();
  data.runItems(again, gap);
  assert.equal(data.splitText(gap, data.timeSplit(again, gap)), "6.0 s across 2 rounds: model 2.0 s, tools 0 ms, other 4.0 s");
});

test("a failed model call and its retry are both bars; the failed one is marked", () => {
  const s = storeOf(script([{ failedCall: [0, 1.5, "RateLimitError"], call: [1.5, 2.5] }]));
  const lanes = data.runItems(data.createCache(), s);
  assert.deepEqual(spans(lanes.model), [
    [1, "model call", 0, 1.5, true],
    [1, "model call", 1.5, 2.5, false],
  ]);
  assert.equal(lanes.model[0].said, "failed: RateLimitError");
});

test("real runs: a tool that raised and pruning calls get their lanes", () => {
  const hostile = data.runItems(data.createCache(), storeOf(loadCase("hostile_tools")));
  const raised = hostile.tool.find((it) => it.failed && it.said.startsWith("raised"));
  assert.ok(raised, JSON.stringify(hostile.tool.map((it) => it.said)));
  assert.match(raised.said, /^raised ValueError/);
  const pruned = data.runItems(data.createCache(), storeOf(loadCase("pruning")));
  assert.ok(pruned.pruning.length >= 1);
  assert.match(pruned.pruning[0].label, /^pruning /);
});

test("a live run: an open call has no end yet, and a pause held now is a growing bar", () => {
  const events = script([{ call: [0, 1], tools: [["a", 1, 2]] }], { finished: false });
  events.push({ kind: "round_start", run_id: "run-1", round: 2, t: 2, max_rounds: 10 });
  events.push({ kind: "model_call_start", run_id: "run-1", round: 2, t: 2.5, call: 9, purpose: "round", model_name: "m", messages: [] });
  const s = storeOf(events);
  let lanes = data.runItems(data.createCache(), s);
  assert.deepEqual(spans(lanes.model).at(-1), [2, "model call", 2.5, null, false]);
  s.control = { ...s.control, paused_at: { pause: 1, round: 3, stage: "tool_dispatch", purpose: "tools" }, paused_since: 3 };
  lanes = data.runItems(data.createCache(), s);
  assert.deepEqual(spans(lanes.pause), [[3, "paused before the tools", 3, null, false]]);
});

test("bars are rebuilt only for rounds that changed (and the newest)", () => {
  const s = storeOf(script(FOUR_ROUNDS, { finished: false }));
  const cache = data.createCache();
  // the lanes are the same arrays from one call to the next: copy what they held
  const copy = (lanes) => Object.fromEntries(Object.entries(lanes).map(([k, v]) => [k, [...v]]));
  const before = copy(data.runItems(cache, s));
  assert.notEqual(data.runItems(cache, s).model[3], before.model[3]); // the newest: rebuilt
  fold(s.run, { kind: "round_start", run_id: "run-1", round: 5, t: 14, max_rounds: 10 });
  fold(s.run, { kind: "intervention", run_id: "run-1", round: 2, t: 5.5, action: "append_message", stage: "model_call", after: {} });
  const after = copy(data.runItems(cache, s));
  assert.equal(after.model[0], before.model[0]); // round 1: unchanged, the same object kept
  assert.equal(after.tool[2], before.tool[2]); // round 3: kept
  assert.notEqual(after.tool[1], before.tool[1]); // round 2 changed: rebuilt
  assert.deepEqual(after.tool[1], before.tool[1]); // (to the same bar)
  assert.deepEqual(after.model.map((it) => it.round), [1, 2, 3, 4]);
  // the sums of the kept rounds and of those rebuilt still add up
  assert.equal(data.splitText(s, data.timeSplit(cache, s)), "14.0 s across 5 rounds: model 9.1 s, tools 4.2 s, paused 200 ms");
  assert.equal(data.slowestRound(cache, s).round.n, 3);
});

test("a pause held now: a last bar that grows, gone once the loop goes on", () => {
  const s = storeOf(script(FOUR_ROUNDS, { finished: false }));
  const cache = data.createCache();
  s.control = { ...s.control, paused_at: { pause: 1, round: 4, stage: "model_call", purpose: "round" }, paused_since: 13.5 };
  assert.equal(data.runItems(cache, s).pause.length, 2);
  s.control = { ...s.control, paused_at: null, paused_since: null };
  assert.equal(data.runItems(cache, s).pause.length, 1);
});

test("bars narrower than a pixel merge into one per pixel column; a failure survives", () => {
  // 10,000 rounds of 1 ms calls, every 97th failed, on a 600 px wide timeline
  const items = [];
  for (let i = 0; i < 10_000; i++) items.push({ t0: i * 0.003, t1: i * 0.003 + 0.001, kind: "tool", failed: i % 97 === 96, stopped: false, round: i + 1, label: "echo", said: "ok" });
  const scale = scaleOf(30, 600);
  const cells = pack(items, scale, 30);
  assert.ok(cells.length <= 600, `${cells.length} cells`);
  assert.equal(cells.reduce((n, c) => n + c.count, 0), 10_000); // every bar is in a cell
  assert.equal(cells.reduce((n, c) => n + c.failed, 0), 103);
  for (const c of cells) assert.deepEqual(items.slice(c.first, c.first + c.count).map((it) => Math.floor(scale.x(it.t0))), Array(c.count).fill(c.x0));
  // wide bars keep their own cells; an open one ends now
  const wide = pack([{ t0: 0, t1: 10, kind: "model", failed: false, stopped: false, round: 1 }, { t0: 10, t1: null, kind: "model", failed: false, stopped: false, round: 2 }], scaleOf(20, 200), 15);
  assert.deepEqual(wide.map((c) => [c.x0, c.x1, c.open]), [[0, 100, false], [100, 150, true]]);
});

test("tools that ran side by side get a row each in their lane; a later one goes back up", () => {
  const s = storeOf(script(FOUR_ROUNDS));
  const lanes = data.runItems(data.createCache(), s);
  const cells = pack(lanes.tool, scaleOf(13.5, 540), 13.5);
  assert.deepEqual(cells.map((c) => [items(lanes.tool, c), c.track]), [["a", 0], ["churn", 0], ["a", 0], ["b", 1]]);
  assert.equal(tracksOf(cells), 2);
  assert.equal(tracksOf(pack(lanes.model, scaleOf(13.5, 540), 13.5)), 1);
  // the row under the pointer picks between bars at the same time
  assert.equal(hitCell(cells, 380, 3, 1), 3); // 9.5 s: b, on the second row
  assert.equal(hitCell(cells, 380, 3, 0), 2); // and a, on the first
});

const items = (list, c) => list[c.first].label;

test("the bar under the pointer: the one drawn on top, else the nearest within a few pixels", () => {
  const cells = [{ x0: 0, x1: 100, track: 0 }, { x0: 50, x1: 60, track: 0 }, { x0: 200, x1: 201, track: 0 }];
  assert.equal(hitCell(cells, 55), 1);
  assert.equal(hitCell(cells, 10), 0);
  assert.equal(hitCell(cells, 203), 2);
  assert.equal(hitCell(cells, 150), -1);
});

test("the axis's ticks are round numbers, never closer than their labels need", () => {
  assert.deepEqual(ticks(13.5, 700), [0, 2, 4, 6, 8, 10, 12]);
  assert.deepEqual(ticks(0.4, 400), [0, 0.1, 0.2, 0.3, 0.4]);
  assert.deepEqual(ticks(600, 400), [0, 120, 240, 360, 480, 600]);
  assert.deepEqual(ticks(0, 400), [0]);
});

test("nested runs: lanes under the shown run, depth first, on the shown run's clock", () => {
  const s = storeOf(script(FOUR_ROUNDS));
  const row = (id, parent, offset, extra = {}) => ({ run_id: id, parent_run_id: parent, parent_tool_call_id: "c3_0", parent_tool_name: "a", name: null, status: "finished", outcome: "final_answer", duration_s: 1, offset_s: offset, spans: [], spans_left_out: 0, ...extra });
  s.runs = new Map([
    ["run-1", row("run-1", null, 0, { parent_tool_call_id: null })],
    ["late", row("late", "run-1", 10, { name: "critic" })],
    ["sub", row("sub", "run-1", 9.4, { name: "researcher", spans: [["model", 0, 0.5, false], ["tool", 0.5, 1.2, true]], spans_left_out: 3 })],
    ["subsub", row("subsub", "sub", 9.6, { spans: [["model", 0.1, 0.2, false]] })],
    ["other", row("other", null, 0)],
    ["stray", row("stray", "other", 1)],
  ]);
  const { lanes, more } = data.nestedRuns(s, 13.5);
  assert.deepEqual(lanes.map((l) => [l.id, l.label, l.depth]), [
    ["sub", "researcher", 1],
    ["subsub", "a", 2], // no name: the tool that started it
    ["late", "critic", 1],
  ]);
  assert.equal(more, 0);
  assert.deepEqual(lanes[0].items.map((it) => [it.kind, it.t0, it.t1, it.failed]), [
    ["model", 9.4, 9.9, false],
    ["tool", 9.9, 9.4 + 1.2, true],
  ]);
  assert.equal(lanes[0].left, 3);
  assert.ok(Math.abs(lanes[1].items[0].t0 - 9.7) < 1e-9);
  assert.equal(lanes[0].toolCallId, "c3_0");
  // only the first `max` are lanes; the rest are counted
  assert.deepEqual(data.nestedRuns(s, 13.5, 1).more, 2);
  // a nested run shown on its own: its children's offsets count from its start
  s.run.runId = "sub";
  assert.deepEqual(data.nestedRuns(s, 2).lanes.map((l) => [l.id, Number(l.offset.toFixed(6))]), [["subsub", 0.2]]);
});

test("no run rows yet (no run list on this page): no nested lanes", () => {
  const s = storeOf(script(FOUR_ROUNDS));
  assert.deepEqual(data.nestedRuns(s, 13.5), { lanes: [], more: 0 });
  assert.equal(data.roundIndexAt(s.run.rounds, 6), 2);
  assert.equal(data.roundIndexAt(s.run.rounds, -1), -1);
  assert.equal(data.roundIndexAt(s.run.rounds, 100), 3);
});
