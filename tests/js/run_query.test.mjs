// What the run list shows of many runs (run_query.js, no DOM): the counts per outcome and
// of runs whose tools failed, the filters (an outcome, tool errors, a name, tag or question
// typed) and the sorts (started, cost, tokens, rounds, duration; ties newest first, an
// unpriced run last whichever way), and the tree kept while nothing is asked.
import assert from "node:assert/strict";
import { test } from "node:test";
import { src } from "./fixtures.mjs";

const { countRuns, defaultQuery, isDefault, outcomeKey, queryRuns } = await import(src("run_query.js"));
const { orderRuns } = await import(src("run_rows.js"));

/** A row as Python's row_payload writes it. */
function row(id, extra = {}) {
  return {
    run_id: id, parent_run_id: null, parent_tool_call_id: null, parent_tool_name: null, name: id, tags: [],
    source: "loop", status: "finished", outcome: "final_answer", rounds: 2, input_tokens: 100, output_tokens: 10,
    cost_usd: "0.0001", total_input_tokens: 100, total_output_tokens: 10, total_cost_usd: "0.0001",
    started_at: null, duration_s: 1.5, offset_s: 0, tool_errors: 0, question: null, ...extra,
  };
}

const runs = new Map(
  [
    row("a", { cost_usd: "0.0030", rounds: 1, tags: ["nightly"], question: "How did churn do?" }),
    row("b", { status: "failed", outcome: "failed", cost_usd: "0.0100", tool_errors: 2, duration_s: 9 }),
    row("c", { cost_usd: null, input_tokens: 5000, rounds: 7 }),
    row("d", { parent_run_id: "a", cost_usd: "0.0030", tool_errors: 1, name: "helper" }),
    row("e", { status: "running", outcome: null, duration_s: 0.2 }),
  ].map((r) => [r.run_id, r]),
);
const q = (more) => ({ ...defaultQuery(), ...more });
const ids = (more) => queryRuns(runs, 0, q(more)).entries.map((e) => e.row.run_id);

test("the counts: each outcome present, most frequent first, and the runs whose tools failed", () => {
  const c = countRuns(runs.values());
  assert.deepEqual(c.outcomes, [["final_answer", 3], ["failed", 1], ["running", 1]]);
  assert.equal(c.toolErrors, 2);
  assert.equal(outcomeKey(row("p", { status: "paused", outcome: null })), "running");
});

test("with nothing asked the list is the tree: newest first, a nested run under its caller", () => {
  const made = queryRuns(runs, 0, defaultQuery());
  assert.equal(made.flat, false);
  assert.deepEqual(made.entries.map((e) => [e.row.run_id, e.depth]), [["e", 0], ["c", 0], ["b", 0], ["a", 0], ["d", 1]]);
  assert.ok(isDefault(q({ text: "   " })));
  assert.ok(!isDefault(q({ desc: false })));
  // the tree a caller kept is used as it is
  const tree = orderRuns(runs, 0);
  assert.equal(queryRuns(runs, 0, defaultQuery(), tree).entries, tree);
});

test("filters: an outcome, tool errors, a name, tag, question or id (any case); flat", () => {
  assert.deepEqual(ids({ outcome: "failed" }), ["b"]);
  assert.deepEqual(ids({ toolErrors: true }), ["d", "b"]);
  assert.deepEqual(ids({ outcome: "final_answer", toolErrors: true }), ["d"]);
  assert.deepEqual(ids({ text: "NIGHTLY" }), ["a"]);
  assert.deepEqual(ids({ text: "churn" }), ["a"]);
  assert.deepEqual(ids({ text: " helper " }), ["d"]);
  assert.deepEqual(ids({ text: "nothing like it" }), []);
  assert.equal(queryRuns(runs, 0, q({ outcome: "failed" })).flat, true);
});

test("sorts: largest first or smallest first; ties newest first; unpriced last either way", () => {
  assert.deepEqual(ids({ sort: "cost" }), ["b", "d", "a", "e", "c"]);
  assert.deepEqual(ids({ sort: "cost", desc: false }), ["e", "d", "a", "b", "c"]);
  assert.deepEqual(ids({ sort: "tokens" }).slice(0, 1), ["c"]);
  assert.deepEqual(ids({ sort: "rounds" }).slice(0, 1), ["c"]);
  assert.deepEqual(ids({ sort: "duration" }), ["b", "d", "c", "a", "e"]);
  assert.deepEqual(ids({ sort: "start", desc: false }), ["a", "b", "c", "d", "e"]);
  assert.deepEqual(ids({ sort: "cost", toolErrors: true }), ["b", "d"]);
});
