// Small runs written by hand as wire events (what Python's event_payload sends), for the
// tests of the whole-run timeline: exact times, so its words and bars can be checked.

const usage = (i, o) => ({ input_tokens: i, output_tokens: o, total_tokens: i + o, cost_usd: "0.0001" });

/**
 * A run's events from a list of rounds: each round {call: [t0, t1], tools: [[name, t0, t1,
 * status?, reason?, errorType?]], pause?: [t0, t1], failedCall?: [t0, t1, type]}.
 * @param {any[]} rounds
 * @param {{runId?: string, end?: number, finished?: boolean}} [options]
 */
export function script(rounds, { runId = "run-1", end, finished = true } = {}) {
  const ev = (kind, round, t, extra = {}) => ({ kind, run_id: runId, round, t, ...extra });
  const out = [ev("loop_start", 0, 0, { model_name: "m", tools: ["a", "b"], max_rounds: 10, started_at: "2025-01-01T00:00:00+00:00" })];
  let call = 0;
  rounds.forEach((spec, i) => {
    const n = i + 1;
    const start = spec.pause ? spec.pause[0] : spec.failedCall ? spec.failedCall[0] : spec.call[0];
    out.push(ev("round_start", n, start, { max_rounds: 10 }));
    if (spec.pause) out.push(ev("pause", n, spec.pause[1], { stage: "model_call", purpose: "round", paused_s: spec.pause[1] - spec.pause[0] }));
    if (spec.failedCall) {
      call++;
      out.push(ev("model_call_start", n, spec.failedCall[0], { call, purpose: "round", model_name: "m", messages: [] }));
      out.push(ev("model_call_failed", n, spec.failedCall[1], { call, purpose: "round", error_type: spec.failedCall[2], message: "boom", latency_s: spec.failedCall[1] - spec.failedCall[0] }));
    }
    call++;
    const tools = spec.tools || [];
    const calls = tools.map(([name], j) => ({ id: `c${n}_${j}`, name, args: {} }));
    out.push(ev("model_call_start", n, spec.call[0], { call, purpose: "round", model_name: "m", messages: [] }));
    out.push(ev("model_call", n, spec.call[1], { call, purpose: "round", model_name: "m", usage: usage(10, 2), accumulated: usage(10 * n, 2 * n), latency_s: spec.call[1] - spec.call[0], text: tools.length ? "" : "done", tool_calls: calls, finish_reason: tools.length ? "tool_calls" : "stop" }));
    for (const [j, [name, t0]] of tools.entries()) out.push(ev("tool_start", n, t0, { tool_call_id: `c${n}_${j}`, name, args: {} }));
    const ends = tools.map((t, j) => [t, j]).sort((a, b) => a[0][2] - b[0][2]);
    for (const [[name, t0, t1, status = "success", reason = null, errorType = null], j] of ends) {
      out.push(ev("tool_dispatch", n, t1, { tool_call_id: `c${n}_${j}`, name, args: {}, status, error_reason: reason, error_type: errorType, duration_s: t1 - t0, output_chars: 2, content: "ok", ran: true }));
    }
  });
  const last = end ?? rounds[rounds.length - 1].call[1];
  if (finished) out.push(ev("loop_finish", rounds.length, last, { final_text: "done", rounds: rounds.length, usage: usage(40, 8), outcome: "final_answer", messages: [] }));
  return out;
}

/** Four rounds, 13.5 s: a pause before round 2's call, a tool that raises in round 2,
 * two tools side by side in round 3 (the slowest, 6.2 s). */
export const FOUR_ROUNDS = [
  { call: [0, 2.0], tools: [["a", 2.0, 3.0]] },
  { pause: [3.0, 3.2], call: [3.2, 5.2], tools: [["churn", 5.2, 5.7, "error", "tool_error", "KeyError"]] },
  { call: [5.7, 9.2], tools: [["a", 9.2, 11.9], ["b", 9.2, 10.0]] },
  { call: [11.9, 13.5] },
];
