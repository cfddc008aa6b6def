// @ts-check
// The fold of a run's events: fold(run, event) grows the run (run.js) as RunView does in
// Python (toolloop_lab/_runview.py; tests/widget/test_widget_parity.py checks they agree). It
// knows no DOM, no link protocol and no control state: only the events.

import { num } from "./format.js";
import { NONE, add, names, sameData } from "./lean.js";
import { addUsage, callOf, findTool, isDone, readUsage, resetRun, roundOf, serverOf, takeLines, toolOf } from "./run.js";

/** @typedef {import("./run.js").Run} Run */
/** @typedef {import("./run.js").Round} Round */
/** @typedef {import("./run.js").WireEvent} WireEvent */

/**
 * Take one event into the run. Events of another run are ignored while this one goes on;
 * a new run's loop_start after this one ended starts the fold over.
 * @param {Run} s
 * @param {WireEvent} e
 */
export function fold(s, e) {
  if (!e || typeof e !== "object") return;
  if (e.kind === "loop_start") {
    if (s.runId !== null && s.runId !== e.run_id) {
      if (!isDone(s) && s.status !== "idle") return; // another run while this one goes on
      resetRun(s);
    }
  }
  if (s.runId === null) s.runId = e.run_id;
  else if (e.run_id !== s.runId) return;
  if (typeof e.t === "number" && e.t > s.lastT) s.lastT = e.t;
  s.version++;
  if (e.kind === "loop_start") startRun(s, e);
  else if (e.kind === "loop_finish" || e.kind === "loop_failure") endRun(s, e);
  else if (e.kind === "server_log") serverLog(s, e);
  else foldRound(s, roundOf(s, e.round), e);
}

/**
 * server_log: lines an MCP server logged (beside the call that ran then, if any); like
 * RunView, no round's time.
 * @param {Run} s
 * @param {WireEvent} e
 */
function serverLog(s, e) {
  if (typeof e.server !== "string") return;
  const lines = Array.isArray(e.lines) ? e.lines.map(String) : [];
  const first = typeof e.first_line === "number" ? e.first_line : 1;
  takeLines(serverOf(s, e.server), first, lines);
  const r = e.tool_call_id ? s.byNumber.get(e.round) : undefined;
  const t = r && e.tool_call_id ? findTool(r, e.tool_call_id) : undefined;
  if (!r || !t) return;
  t.log = t.log === NONE ? [] : t.log;
  lines.forEach((text, i) => t.log.push({ n: first + i, text }));
  t.logDropped += typeof e.dropped === "number" ? e.dropped : 0;
  if (!t.server) t.server = e.server;
  r.v++;
}

/**
 * An event of round `r`.
 * @param {Run} s
 * @param {Round} r
 * @param {WireEvent} e
 */
function foldRound(s, r, e) {
  r.v++;
  if (typeof e.t === "number") {
    // the round's span, as RunView keeps it (a reply's own start is set below)
    if (r.t0 === null && e.kind !== "model_call") r.t0 = e.t;
    if (r.tLast === null || e.t > r.tLast) r.tLast = e.t;
  }
  switch (e.kind) {
    case "round_start":
      if (r.t0 === null) r.t0 = e.t;
      if (s.status === "idle") s.status = "running";
      break;
    case "model_call_start": {
      if (e.purpose === "pruning") {
        const c = callOf(s, e, r);
        Object.assign(c, { purpose: "pruning", model: e.model_name, t0: e.t, streaming: !!e.streaming });
        c.messages = e.messages || [];
        c.toolCallId = e.tool_call_id;
        r.prunings = add(r.prunings, c);
        if (e.tool_call_id) {
          const t = findTool(r, e.tool_call_id);
          if (t) t.pruning = true;
        }
        break;
      }
      if (e.purpose === "summarization") {
        // a call of the round, not the round's own: LangChain's SummarizationMiddleware
        const c = callOf(s, e, r);
        Object.assign(c, { purpose: "summarization", model: e.model_name, t0: e.t, streaming: false });
        c.messages = e.messages || [];
        r.summaries = add(r.summaries, c);
        break;
      }
      const c = callOf(s, e, r);
      Object.assign(c, { purpose: e.purpose, model: e.model_name, t0: e.t, streaming: !!e.streaming });
      c.tools = names(e.tools);
      c.msgFrom = s.conversation.length;
      for (const m of e.messages || []) s.conversation.push(m);
      c.msgTo = s.conversation.length;
      r.call = c;
      if (e.purpose === "synthesis") r.purpose = "synthesis";
      if (r.t0 === null) r.t0 = e.t;
      break;
    }
    case "model_delta": {
      const c = s.calls.get(e.call) || callOf(s, e, r);
      if (!r.call && c.purpose !== "pruning" && c.purpose !== "summarization") r.call = c;
      if (c.t0 === null) c.t0 = e.t;
      c.text += e.text || "";
      if (c.fragments === NONE && e.tool_calls && e.tool_calls.length) c.fragments = [];
      for (const f of e.tool_calls || []) {
        const slot = c.fragments[f.index] || (c.fragments[f.index] = { id: null, name: "", args: "" });
        if (f.id) slot.id = f.id;
        if (f.name) slot.name = f.name;
        slot.args += f.args || "";
      }
      break;
    }
    case "model_call": {
      if (e.purpose === "summarization") {
        const c = callOf(s, e, r);
        if (!r.summaries.includes(c)) r.summaries = add(r.summaries, c);
        const usage = readUsage(e.usage);
        Object.assign(c, { purpose: "summarization", model: e.model_name, usage, latency: e.latency_s, t1: e.t, text: e.text || "", done: true });
        if (c.t0 === null || typeof e.latency_s === "number") c.t0 = Math.max(0, e.t - (e.latency_s || 0));
        r.summaryUsage = addUsage(r.summaryUsage, usage);
        s.totals = readUsage(e.accumulated);
        break;
      }
      const c = callOf(s, e, r);
      c.purpose = e.purpose;
      c.model = e.model_name;
      c.usage = readUsage(e.usage);
      c.latency = e.latency_s;
      c.firstToken = e.first_token_s === undefined ? null : e.first_token_s;
      // the request went out latency_s before the reply (a pause after model_call_start
      // is not part of the call)
      if (typeof e.latency_s === "number") c.t0 = Math.max(c.t0 === null ? 0 : c.t0, e.t - e.latency_s);
      else if (c.t0 === null) c.t0 = e.t;
      c.t1 = e.t;
      c.text = e.text || "";
      c.toolCalls = e.tool_calls || [];
      c.finish = e.finish_reason;
      c.stuck = !!e.stuck;
      c.empty = !!e.empty;
      c.truncated = !!e.truncated;
      c.done = true;
      c.fragments = NONE;
      r.call = c;
      if (e.purpose === "synthesis") r.purpose = "synthesis";
      if (r.t0 === null) r.t0 = c.t0;
      for (const tc of c.toolCalls) {
        const t = toolOf(r, tc.id, tc.name, tc.args);
        t.valid = tc.valid !== false;
        t.callError = tc.error || null;
        s.toolNames.add(tc.name);
      }
      s.totals = readUsage(e.accumulated);
      s.lastContext = c.usage.input;
      break;
    }
    case "model_call_failed": {
      // the call raised or was stopped: no reply (a framework may retry with a new call)
      const c = e.call ? s.calls.get(e.call) : null;
      if (c) {
        c.t1 = e.t;
        c.interrupted = e.error_type === "CancelledError" ? "cancelled" : "failed";
        c.error = { type: e.error_type, message: e.message || "", traceback: e.traceback || null };
        if (e.partial_text) c.text = e.partial_text;
        if (e.usage && e.purpose !== "pruning") c.usage = readUsage(e.usage); // reported before it failed: paid for
      }
      if (e.usage && e.purpose === "pruning") r.pruneUsage = addUsage(r.pruneUsage, readUsage(e.usage));
      if (e.usage && e.purpose === "summarization") r.summaryUsage = addUsage(r.summaryUsage, readUsage(e.usage));
      if (e.accumulated) s.totals = readUsage(e.accumulated);
      if (e.purpose !== "pruning" && e.purpose !== "summarization") r.failedCalls = add(r.failedCalls, { type: e.error_type, message: e.message || "", traceback: e.traceback || null, latency: e.latency_s, t: e.t });
      break;
    }
    case "tool_start": {
      const t = toolOf(r, e.tool_call_id, e.name, e.args);
      // what it really runs with (a person may have edited them); the same data keeps one copy
      if (e.args && !sameData(t.args, e.args)) t.args = e.args;
      t.status = "running";
      t.tStart = e.t;
      s.toolNames.add(e.name);
      if (typeof e.server === "string") {
        t.server = e.server;
        const v = serverOf(s, e.server);
        v.transport = e.transport || v.transport;
        v.session = e.session_id || v.session;
      }
      break;
    }
    case "tool_dispatch": {
      const t = toolOf(r, e.tool_call_id, e.name, e.args);
      t.name = e.name;
      if (!sameData(t.args, e.args || {})) t.args = e.args || {};
      t.ran = e.ran !== false;
      t.status = t.ran ? e.status : "not_run";
      t.reason = e.error_reason;
      t.errorType = e.error_type || null;
      t.content = e.content || "";
      t.tEnd = e.t;
      if (t.ran) {
        t.duration = e.duration_s;
        t.chars = e.output_chars;
        if (t.tStart === null) t.tStart = Math.max(0, e.t - (e.duration_s || 0));
      } else {
        t.duration = null;
        t.chars = 0;
      }
      t.blocks = Array.isArray(e.blocks) ? e.blocks : null;
      t.structured = e.structured && typeof e.structured === "object" ? e.structured : null;
      s.toolNames.add(e.name);
      if (typeof e.server === "string") {
        t.server = e.server;
        const v = serverOf(s, e.server);
        v.calls++;
        if (e.status !== "success") v.failed++;
      }
      break;
    }
    case "pruning": {
      const usage = readUsage(e.usage);
      r.pruneUsage = addUsage(r.pruneUsage, usage);
      s.totals = addUsage(s.totals, usage);
      const t = findTool(r, e.tool_call_id);
      /** @type {import("./run.js").Pruning} */
      const rec = {
        model: e.model_name,
        before: e.tokens_before,
        after: e.tokens_after,
        usage,
        latency: e.latency_s,
        original: e.original || "",
        pruned: e.pruned || "",
        t1: e.t,
        call: e.call || 0,
        saved: 0,
        net: 0,
      };
      rec.saved = rec.before - rec.after;
      rec.net = rec.saved - (usage.input + usage.output);
      const c = rec.call ? s.calls.get(rec.call) : null;
      if (c) {
        c.t1 = e.t;
        c.done = true;
        c.usage = usage;
        c.latency = e.latency_s;
      } else {
        r.prunings = add(r.prunings, { purpose: "pruning", toolCallId: e.tool_call_id, model: e.model_name, t0: Math.max(0, e.t - (e.latency_s || 0)), t1: e.t, done: true, usage, latency: e.latency_s });
      }
      if (t) {
        t.pruned = rec;
        t.pruning = false;
      }
      break;
    }
    case "budget_gate":
      r.gates = add(r.gates, { gate: e.gate, stage: e.stage, limit: Number(e.limit), spent: Number(e.spent), passed: !!e.passed });
      if (e.gate === "token") s.tokenGate = e.passed ? "passed" : "tripped";
      else s.usdGate = e.passed ? "passed" : "tripped";
      break;
    case "synthesis":
      r.purpose = "synthesis";
      r.synthesis = { reason: e.reason, prompt: e.prompt || "" };
      if (r.t0 === null) r.t0 = e.t;
      break;
    case "pause": {
      // the loop went on (or was stopped) at e.t after a pause held it paused_s
      const held = typeof e.paused_s === "number" && e.paused_s > 0 ? e.paused_s : 0;
      r.pauses = add(r.pauses, { stage: e.stage, purpose: e.purpose, t0: Math.max(0, e.t - held), t1: e.t });
      r.paused += held;
      s.paused += held;
      s.pauses++;
      break;
    }
    case "intervention": {
      r.interventions = add(r.interventions, { action: e.action, stage: e.stage, id: e.tool_call_id, before: e.before, after: e.after });
      const t = e.tool_call_id ? findTool(r, e.tool_call_id) : null;
      if (t && e.action === "edit_args") {
        t.args = e.after || {};
        t.edited = true;
        t.valid = true;
        t.callError = null;
      }
      if (t && e.action === "skip") t.answeredByHand = true;
      break;
    }
    default:
      break; // a kind from a newer version: ignored
  }
  if (r.call && r.call.usage) {
    const cost = (r.call.usage.cost || 0) + (r.pruneUsage.cost || 0) + (r.summaryUsage.cost || 0);
    if (cost > s.maxRoundCost) s.maxRoundCost = cost;
  }
}

/**
 * loop_start: what the run is (its model, tools, limits).
 * @param {Run} s
 * @param {WireEvent} e
 */
function startRun(s, e) {
  s.run = {
    model: e.model_name,
    tools: e.tools || [],
    maxRounds: e.max_rounds,
    tokenBudget: e.token_budget,
    contextWindow: e.context_window,
    usdLimit: num(e.usd_limit),
    pruneTools: e.prune_tools || [],
    startedAt: e.started_at,
    source: e.source || "loop",
    name: e.name || null,
    inputMessages: e.input_messages,
  };
  s.status = "running";
  s.tokenGate = e.token_budget === null || e.token_budget === undefined ? "off" : "passed";
  s.usdGate = e.usd_limit === null || e.usd_limit === undefined ? "off" : "passed";
}

/**
 * loop_finish or loop_failure: how the run ended; what was still open never finished.
 * @param {Run} s
 * @param {WireEvent} e
 */
function endRun(s, e) {
  if (e.kind === "loop_finish") {
    s.finish = e;
    s.outcome = e.outcome || (e.budget_exhausted ? "token_budget_exhausted" : e.synthesis_was_run ? "synthesis" : "final_answer");
    s.status = "finished";
  } else {
    s.failure = e;
    s.outcome = e.outcome || (e.cancelled ? "cancelled" : "failed");
    s.status = e.cancelled ? "cancelled" : "failed";
  }
  s.totals = readUsage(e.usage);
  for (const m of e.messages || []) s.conversation.push(m);
  closeOpen(s, s.outcome === "interrupted" ? "interrupted" : s.status);
}

/**
 * @param {Run} s
 * @param {string} how finished, failed, cancelled or interrupted (a LangGraph interrupt())
 */
function closeOpen(s, how) {
  // calls and tools still open when a run ends never finished: a tool that had begun ran
  // until then (cut short, as RunView says), one that had not reads "not run"; a tool an
  // interrupt() paused waits for input
  const last = s.rounds[s.rounds.length - 1];
  if (!last) return;
  for (const t of last.tools) {
    if (t.status === "running" && t.tStart !== null) {
      t.status = "cancelled";
      t.reason = how === "cancelled" || how === "interrupted" ? how : "unfinished";
      t.tEnd = s.lastT;
      t.duration = Math.max(0, s.lastT - t.tStart);
    } else if (t.status === "queued" || t.status === "running") {
      t.status = "not_run";
      t.reason = t.reason || (how === "cancelled" || how === "interrupted" ? how : "unfinished");
      t.tEnd = s.lastT;
    }
  }
  if (last.call && !last.call.done) last.call.interrupted = how;
  for (const c of last.prunings) if (!c.done) c.interrupted = how;
  last.v++;
}

