// The run's fold (fold.js) on real runs: status, outcome, rounds, totals, each call.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadCase, src } from "./fixtures.mjs";
import { objectsIn } from "./objects.mjs";

const { fold } = await import(src("fold.js"));
const { createRun, isDone, outcomeText } = await import(src("run.js"));
const { sameData } = await import(src("lean.js"));

function folded(events) {
  const run = createRun();
  for (const e of events) fold(run, e);
  return run;
}

test("a finished run: its status, outcome, rounds and the catalog's known totals", () => {
  const run = folded(loadCase("single_round"));
  assert.equal(run.status, "finished");
  assert.equal(isDone(run), true);
  assert.equal(run.outcome, "final_answer");
  assert.equal(outcomeText(run), "Answered");
  assert.deepEqual(run.rounds.map((r) => [r.n, r.purpose]), [[1, "round"], [2, "round"]]);
  // call n of a catalog script uses 10 + 2n input and 5 + n output tokens
  assert.deepEqual([run.totals.input, run.totals.output], [12 + 14, 6 + 7]);
  assert.ok(run.totals.cost > 0);
  const [first, second] = run.rounds;
  assert.deepEqual(first.tools.map((t) => [t.name, t.status, t.ran]), [["echo", "success", true]]);
  assert.equal(first.call.done, true);
  assert.deepEqual([first.call.usage.input, first.call.usage.output], [12, 6]);
  assert.equal(second.tools.length, 0);
  assert.equal(second.call.text, "Final answer from loop");
});

test("every call's status: success, a tool error, no such tool, an invalid call", () => {
  const run = folded(loadCase("hostile_tools"));
  const tools = run.rounds[0].tools.map((t) => [t.id, t.status, t.ran, t.reason]);
  assert.deepEqual(tools, [
    ["c1", "success", true, null],
    ["c2", "error", true, "tool_error"],
    ["c3", "error", true, "not_available"],
    ["c4", "error", true, "invalid_call"],
  ]);
  assert.equal(run.rounds[0].tools[3].valid, false);
  assert.ok(run.rounds[0].tools[0].content.includes("<img src=x onerror=alert(1)>")); // kept as text
});

test("a tool stopped mid-run is cut short; the run reads cancelled", () => {
  const run = folded(loadCase("cancelled_tool"));
  assert.equal(run.status, "cancelled");
  assert.equal(run.outcome, "cancelled");
  const [hang, other] = run.rounds[0].tools;
  assert.deepEqual([hang.status, hang.ran, hang.reason], ["cancelled", true, "cancelled"]);
  assert.ok(hang.duration >= 0);
  assert.equal(other.status, "success");
});

test("a token budget trips: the gate reads tripped and the tools were not run", () => {
  const run = folded(loadCase("token_budget"));
  assert.equal(run.outcome, "token_budget_exhausted");
  assert.equal(run.tokenGate, "tripped");
  const t = run.rounds[0].tools[0];
  assert.deepEqual([t.status, t.ran, t.reason], ["not_run", false, "token_budget"]);
});

test("a model that raises fails the run; the failed call is kept", () => {
  const run = folded(loadCase("model_exception"));
  assert.equal(run.status, "failed");
  const last = run.rounds[run.rounds.length - 1];
  assert.equal(last.failedCalls.length, 1);
  assert.equal(last.call.interrupted, "failed");
  assert.equal(run.failure.kind, "loop_failure");
});

test("another run's events are ignored while this one goes on; a new run after it starts over", () => {
  const events = loadCase("single_round");
  const other = loadCase("multi_round");
  const run = createRun();
  for (const e of events.slice(0, 4)) fold(run, e);
  const before = run.rounds.length;
  for (const e of other) fold(run, e); // a nested agent's run, say
  assert.equal(run.rounds.length, before);
  assert.equal(run.runId, events[0].run_id);
  for (const e of events.slice(4)) fold(run, e);
  assert.equal(run.status, "finished");
  for (const e of other) fold(run, e); // the next run, once this one ended
  assert.equal(run.runId, other[0].run_id);
  assert.equal(run.rounds.length, 3);
  assert.equal(run.status, "finished");
});

test("a kind from a newer version, and what is not an event, are ignored", () => {
  const events = loadCase("single_round");
  const run = folded(events);
  const version = run.version;
  fold(run, null);
  fold(run, "text");
  assert.equal(run.version, version);
  fold(run, { kind: "from_the_future", run_id: run.runId, round: 1, t: 0.1 });
  assert.equal(run.rounds.length, 2);
  assert.equal(run.status, "finished");
});

test("a long run keeps few objects a round: empty lists shared, one copy of each call's arguments and tool names", () => {
  const run = folded(loadCase("long_run"));
  const rounds = run.rounds.filter((r) => r.tools.length === 1);
  assert.equal(rounds.length, 200);
  const [a, b] = rounds;
  // lists a round has nothing in are one shared, frozen list (a push on it would throw)
  for (const key of ["pauses", "prunings", "gates", "interventions", "failedCalls"]) {
    assert.equal(a[key], b[key], key);
    assert.equal(a[key].length, 0, key);
    assert.ok(Object.isFrozen(a[key]), key);
  }
  assert.equal(a.call.fragments, b.call.fragments);
  assert.equal(a.pruneUsage, b.pruneUsage);
  // tool_start and tool_dispatch repeat the arguments the reply asked with: one copy kept
  assert.equal(a.tools[0].args, a.call.toolCalls[0].args);
  assert.deepEqual(a.tools[0].args, { n: 0 });
  // every round's call was told of the same tools: one list
  assert.equal(a.call.tools, b.call.tools);
  assert.deepEqual(a.call.tools, ["count"]);
  // a round, its call, its tool call and their usage: 8 objects (18 when each round kept
  // its own empty lists, a map of its tools and a second copy of the arguments)
  const perRound = objectsIn(run.rounds) / run.rounds.length;
  assert.ok(perRound <= 10, `${perRound} objects a round`);
});

test("a pause, a gate or a failed call goes to its own round's list, not the shared empty one", () => {
  const run = folded(loadCase("usd_stop_mid_run"));
  const gated = run.rounds.filter((r) => r.gates.length);
  assert.ok(gated.length > 0);
  const empty = run.rounds.filter((r) => !r.gates.length);
  for (const r of gated) for (const e of empty) assert.notEqual(r.gates, e.gates);
  const failed = folded(loadCase("model_exception")).rounds.filter((r) => r.failedCalls.length);
  assert.ok(failed.length > 0);
  assert.ok(failed.every((r) => !Object.isFrozen(r.failedCalls)));
});

test("sameData: the same JSON data, keys in the same order; anything else, or past 1,000 entries, is not", () => {
  assert.equal(sameData({ a: [1, { b: "x" }], c: null }, { a: [1, { b: "x" }], c: null }), true);
  assert.equal(sameData({ a: 1, b: 2 }, { b: 2, a: 1 }), false); // shown in another order
  assert.equal(sameData({ a: 1 }, { a: "1" }), false);
  assert.equal(sameData([1], { 0: 1 }), false);
  assert.equal(sameData({ a: {} }, { a: null }), false);
  assert.equal(sameData({ a: [1, 2] }, { a: [1, 2, 3] }), false);
  const big = () => ({ list: Array.from({ length: 1000 }, (_, i) => i) });
  assert.equal(sameData(big(), big()), false); // too many entries to compare: kept as a new copy
  const fits = () => ({ list: Array.from({ length: 998 }, (_, i) => i) });
  assert.equal(sameData(fits(), fits()), true);
});
