// The browser's fold of runs, summarised for tests/widget/test_widget_parity.py: reads
// {case: [wire payload, ...]} on stdin, folds each case with toolloop_lab/_widget/src/fold.js
// and prints {case: summary} (the same summary the Python side writes from RunView).
import { readFileSync } from "node:fs";

const src = (name) => new URL(`../../toolloop_lab/_widget/src/${name}`, import.meta.url).href;
const { fold } = await import(src("fold.js"));
const { createRun, outcomeText } = await import(src("run.js"));
const { STATUS, statusCode, toolOutcome, usd, word } = await import(src("words.js"));
const { budgetStop } = await import(src("budget.js"));
const { runQuestion } = await import(src("question.js"));
const { roundCost } = await import(src("rounds.js"));
const { modelCalls, roundsRun, roundsSaid, toolRounds } = await import(src("counts.js"));

/** A round's model call: replied, failed (raised or stopped), unanswered, or none. */
function callStatus(call) {
  if (!call) return "none";
  if (call.done) return "replied";
  return call.error ? "failed" : "unanswered";
}

function summary(run) {
  const t = run.totals;
  return {
    status: run.status,
    outcome: run.outcome,
    // what a person reads: the status pill's word and how the run ended
    said: [word(STATUS, statusCode(run.status, run.outcome)), budgetStop(run) || outcomeText(run)],
    rounds: run.rounds.length,
    rounds_run: roundsRun(run),
    tool_rounds: toolRounds(run),
    model_calls: modelCalls(run),
    rounds_said: roundsSaid(run),
    // what the header shows beside the run's name: its first user message, cut
    question: runQuestion(run),
    input_tokens: t.input,
    output_tokens: t.output,
    estimated: t.estimated,
    cost: t.cost,
    cost_text: usd(t.cost),
    per_round: run.rounds.map((r) => ({
      round: r.n,
      purpose: r.purpose,
      model_call: callStatus(r.call),
      failed_calls: r.failedCalls.map((f) => f.type),
      input_tokens: r.call && r.call.usage ? r.call.usage.input : 0,
      output_tokens: r.call && r.call.usage ? r.call.usage.output : 0,
      summarizations: r.summaries.map((c) => [c.call, c.usage ? c.usage.input : 0, c.usage ? c.usage.output : 0]),
      round_cost: roundCost(r) === null ? null : Number(roundCost(r).toFixed(10)),
      // what happened to each call, in the words both sides take from words.json
      tools: r.tools.map((x) => [x.id, x.name, x.status, x.ran, x.reason, x.errorType, toolOutcome(x.status, x.reason, x.ran, x.errorType), x.server, x.log.map((l) => l.n), x.logDropped]),
    })),
    servers: [...run.servers.values()].map((v) => [v.name, v.transport, v.calls, v.failed, v.lastLine, [...v.lines.entries()]]),
  };
}

const cases = JSON.parse(readFileSync(0, "utf8"));
const out = {};
for (const [name, events] of Object.entries(cases)) {
  const run = createRun();
  for (const e of events) fold(run, e);
  out[name] = summary(run);
}
process.stdout.write(JSON.stringify(out));
