// @ts-nocheck -- typed module by module as this file is split (issue 25), as ./words.js is.
// toolloop_lab's LoopDebugger front end. esbuild bundles this source folder (with the words
// file it imports) into the one shipped module, static/debugger.js: `npm ci && npm run build`.
//
// Python sends only new events (batched, at most ten messages a second); this module folds
// them into a store shared by every view of the widget, and each view draws from the store.
// Timers (the run's elapsed time, a model call or a tool in progress) tick here, with no
// kernel traffic. Every string from a model, a tool, a file or an exception reaches the page
// through textContent / createTextNode only: no HTML is ever parsed from data.
//
// Entry points: the anywidget lifecycle (default export: initialize + render) and
// mount(el, events, options) for a static page (the HTML report, the snapshot).

import { CUT_SHORT, GATE_NAME, INTERVENTION, OUTCOME, ROUND_STATE, SYNTH, outcomeWords, reasonWords, usd, word } from "./words.js";

export { outcomeWords, reasonWords, usd };

const ROW_H = 30; // px, one timeline row (fixed: the list is virtualised)
const TIMELINE_ROWS = 9; // visible rows: the timeline's height never changes
const SLICE_MS = 8; // longest fold slice before yielding to the page
const TICK_MS = 250; // timer refresh while a run is live
const DRAW_MS = 150; // shortest time between two redraws driven by new events
const PREVIEW_CHARS = 4000; // text shown before "show all"
const MAX_JSON_ENTRIES = 200; // entries of one JSON level drawn before "… more"
const MAX_MESSAGES = 40; // messages of one call drawn before "show earlier"

// -- formatting ---------------------------------------------------------------------------
const nf = new Intl.NumberFormat("en-US");
const tokens = (n) => (n === null || n === undefined ? "—" : nf.format(n));
function duration(s) {
  if (s === null || s === undefined || !isFinite(s)) return "—";
  if (s < 0) s = 0;
  if (s < 1) return `${Math.round(s * 1000)} ms`;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  const r = Math.floor(s - m * 60);
  if (m < 60) return `${m} min ${String(r).padStart(2, "0")} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} min`;
}
const num = (s) => (s === null || s === undefined ? null : Number(s));
function pct(f) {
  return f === null || f === undefined || !isFinite(f) ? "—" : `${(f * 100).toFixed(1)}%`;
}
function plural(n, word, many) {
  return `${nf.format(n)} ${n === 1 ? word : many || word + "s"}`;
}

// -- the store: a fold of events ----------------------------------------------------------
function newUsage() {
  return { input: 0, output: 0, cacheRead: 0, cost: 0, costIn: null, costOut: null, estimated: false };
}
function readUsage(u) {
  const out = newUsage();
  if (!u) return out;
  out.input = u.input_tokens || 0;
  out.output = u.output_tokens || 0;
  out.cacheRead = u.cache_read_tokens || 0;
  out.cost = u.cost_usd === null || u.cost_usd === undefined ? null : Number(u.cost_usd);
  out.costIn = num(u.input_cost_usd);
  // the output part is derived (total minus input), as Usage.output_cost_usd is
  out.costOut = out.cost !== null && out.costIn !== null ? out.cost - out.costIn : null;
  out.estimated = !!u.estimated;
  return out;
}
function addUsage(a, b) {
  const sum = (x, y) => (x === null || y === null ? null : x + y);
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cost: sum(a.cost, b.cost),
    costIn: a.costIn === null && b.costIn === null ? null : sum(a.costIn || 0, b.costIn || 0),
    costOut: a.costOut === null && b.costOut === null ? null : sum(a.costOut || 0, b.costOut || 0),
    estimated: a.estimated || b.estimated,
  };
}

export function createStore() {
  const s = {
    version: 0,
    epoch: null,
    received: 0, // events taken in this epoch (for gap detection)
    queue: [],
    qi: 0,
    draining: false,
    listeners: new Set(),
    control: { paused_at: null, running: false, note: null, stopped_by_user: false },
    clockBase: null, // performance.now()/1000 minus the run's clock, from the last batch
    live: false,
    source: "none",
    offset: 0, // added to every round number shown (a fork's rounds read as the original's)
    forkInfo: null, // a fork's debugger: where it was forked, and the comparison at its end
    canFork: false,
    requests: new Map(), // request number -> what to do with its answer
    nextRequest: 1 + Math.floor(Math.random() * 1e9), // never an earlier page's number
    ui: { selected: null, filter: "all", tool: "", search: "", collapsed: new Map(), follow: true, edit: null, forkMsg: null },
  };
  resetRun(s);
  return s;
}

function resetRun(s) {
  s.runId = null;
  s.run = null;
  s.status = "idle";
  s.outcome = null;
  s.finish = null;
  s.failure = null;
  s.lastT = 0;
  s.paused = 0; // seconds pauses held the loop ("pause" events): a person's time, not the run's
  s.pauses = 0; // ... and how many there were (a round a pause held always says so)
  s.totals = newUsage();
  s.lastContext = 0;
  s.rounds = [];
  s.byNumber = new Map();
  s.calls = new Map();
  s.conversation = [];
  s.tokenGate = "off";
  s.usdGate = "off";
  s.toolNames = new Set();
  s.maxRoundCost = 0;
  s.version++;
}

function roundOf(s, n) {
  let r = s.byNumber.get(n);
  if (!r) {
    r = {
      n,
      index: s.rounds.length,
      purpose: "round",
      t0: null, // run time of its first event
      tLast: null, // ... and of its last
      pauses: [], // {stage, purpose, t0, t1}: where a pause held the loop, its own segment
      paused: 0, // seconds of those: never part of the round's duration
      call: null,
      prunings: [],
      tools: [],
      toolById: new Map(),
      gates: [],
      synthesis: null,
      interventions: [],
      failedCalls: [], // model calls of this round that raised (retried, or the run failed)
      pruneUsage: newUsage(),
      v: 0,
      hay: null,
      hayV: -1,
    };
    s.rounds.push(r);
    s.byNumber.set(n, r);
  }
  return r;
}

function toolOf(r, id, name, args) {
  let t = r.toolById.get(id);
  if (!t) {
    t = {
      id,
      name: name || "?",
      args: args || {},
      valid: true,
      callError: null,
      tStart: null,
      tEnd: null,
      status: "queued",
      reason: null,
      ran: true,
      duration: null,
      chars: 0,
      content: "",
      pruned: null,
      pruning: false,
      edited: false, // arguments changed by a person at the pause
      answeredByHand: false, // a person wrote its result instead of running it
    };
    r.tools.push(t);
    r.toolById.set(id, t);
  }
  return t;
}

function callOf(s, e, r) {
  let c = e.call ? s.calls.get(e.call) : null;
  if (!c) {
    c = {
      call: e.call || 0,
      round: r.n,
      purpose: e.purpose || "round",
      model: e.model_name || null,
      tools: [],
      t0: null,
      t1: null,
      streaming: false,
      text: "",
      fragments: [],
      msgFrom: null,
      msgTo: null,
      messages: null,
      usage: null,
      latency: null,
      firstToken: null,
      toolCalls: [],
      finish: null,
      stuck: false,
      empty: false,
      truncated: false,
      done: false,
    };
    if (e.call) s.calls.set(e.call, c);
  }
  return c;
}

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
  const r = e.kind === "loop_start" || e.kind === "loop_finish" || e.kind === "loop_failure" ? null : roundOf(s, e.round);
  if (r) {
    r.v++;
    if (typeof e.t === "number") {
      // the round's span, as RunView keeps it (a reply's own start is set below)
      if (r.t0 === null && e.kind !== "model_call") r.t0 = e.t;
      if (r.tLast === null || e.t > r.tLast) r.tLast = e.t;
    }
  }
  switch (e.kind) {
    case "loop_start":
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
      break;
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
        r.prunings.push(c);
        if (e.tool_call_id) {
          const t = r.toolById.get(e.tool_call_id);
          if (t) t.pruning = true;
        }
        break;
      }
      const c = callOf(s, e, r);
      Object.assign(c, { purpose: e.purpose, model: e.model_name, t0: e.t, streaming: !!e.streaming });
      c.tools = e.tools || [];
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
      if (!r.call && c.purpose !== "pruning") r.call = c;
      if (c.t0 === null) c.t0 = e.t;
      c.text += e.text || "";
      for (const f of e.tool_calls || []) {
        const slot = c.fragments[f.index] || (c.fragments[f.index] = { id: null, name: "", args: "" });
        if (f.id) slot.id = f.id;
        if (f.name) slot.name = f.name;
        slot.args += f.args || "";
      }
      break;
    }
    case "model_call": {
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
      c.fragments = [];
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
        c.error = { type: e.error_type, message: e.message || "" };
        if (e.partial_text) c.text = e.partial_text;
        if (e.usage && e.purpose !== "pruning") c.usage = readUsage(e.usage); // reported before it failed: paid for
      }
      if (e.usage && e.purpose === "pruning") r.pruneUsage = addUsage(r.pruneUsage, readUsage(e.usage));
      if (e.accumulated) s.totals = readUsage(e.accumulated);
      if (e.purpose !== "pruning") r.failedCalls.push({ type: e.error_type, message: e.message || "", latency: e.latency_s });
      break;
    }
    case "tool_start": {
      const t = toolOf(r, e.tool_call_id, e.name, e.args);
      if (e.args) t.args = e.args; // what it really runs with (a person may have edited them)
      t.status = "running";
      t.tStart = e.t;
      s.toolNames.add(e.name);
      break;
    }
    case "tool_dispatch": {
      const t = toolOf(r, e.tool_call_id, e.name, e.args);
      t.name = e.name;
      t.args = e.args || {};
      t.ran = e.ran !== false;
      t.status = t.ran ? e.status : "not_run";
      t.reason = e.error_reason;
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
      s.toolNames.add(e.name);
      break;
    }
    case "pruning": {
      const usage = readUsage(e.usage);
      r.pruneUsage = addUsage(r.pruneUsage, usage);
      s.totals = addUsage(s.totals, usage);
      const t = r.toolById.get(e.tool_call_id);
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
        r.prunings.push({ purpose: "pruning", toolCallId: e.tool_call_id, model: e.model_name, t0: Math.max(0, e.t - (e.latency_s || 0)), t1: e.t, done: true, usage, latency: e.latency_s });
      }
      if (t) {
        t.pruned = rec;
        t.pruning = false;
      }
      break;
    }
    case "budget_gate":
      r.gates.push({ gate: e.gate, stage: e.stage, limit: Number(e.limit), spent: Number(e.spent), passed: !!e.passed });
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
      r.pauses.push({ stage: e.stage, purpose: e.purpose, t0: Math.max(0, e.t - held), t1: e.t });
      r.paused += held;
      s.paused += held;
      s.pauses++;
      break;
    }
    case "intervention": {
      r.interventions.push({ action: e.action, stage: e.stage, id: e.tool_call_id, before: e.before, after: e.after });
      const t = e.tool_call_id ? r.toolById.get(e.tool_call_id) : null;
      if (t && e.action === "edit_args") {
        t.args = e.after || {};
        t.edited = true;
        t.valid = true;
        t.callError = null;
      }
      if (t && e.action === "skip") t.answeredByHand = true;
      break;
    }
    case "loop_finish":
      s.finish = e;
      s.outcome = e.outcome || (e.budget_exhausted ? "token_budget_exhausted" : e.synthesis_was_run ? "synthesis" : "final_answer");
      s.totals = readUsage(e.usage);
      for (const m of e.messages || []) s.conversation.push(m);
      s.status = "finished";
      closeOpen(s, "finished");
      break;
    case "loop_failure":
      s.failure = e;
      s.outcome = e.outcome || (e.cancelled ? "cancelled" : "failed");
      s.totals = readUsage(e.usage);
      for (const m of e.messages || []) s.conversation.push(m);
      s.status = e.cancelled ? "cancelled" : "failed";
      closeOpen(s, s.status);
      break;
    default:
      break; // a kind from a newer version: ignored
  }
  if (r && r.call && r.call.usage) {
    const cost = (r.call.usage.cost || 0) + (r.pruneUsage.cost || 0);
    if (cost > s.maxRoundCost) s.maxRoundCost = cost;
  }
}

function closeOpen(s, how) {
  // calls and tools still open when a run ends never finished: a tool that had begun ran
  // until then (cut short, as RunView says), one that had not reads "not run"
  const last = s.rounds[s.rounds.length - 1];
  if (!last) return;
  for (const t of last.tools) {
    if (t.status === "running" && t.tStart !== null) {
      t.status = "cancelled";
      t.reason = how === "cancelled" ? "cancelled" : "unfinished";
      t.tEnd = s.lastT;
      t.duration = Math.max(0, s.lastT - t.tStart);
    } else if (t.status === "queued" || t.status === "running") {
      t.status = "not_run";
      t.reason = t.reason || (how === "cancelled" ? "cancelled" : "unfinished");
      t.tEnd = s.lastT;
    }
  }
  if (last.call && !last.call.done) last.call.interrupted = how;
  for (const c of last.prunings) if (!c.done) c.interrupted = how;
  last.v++;
}

export const isDone = (s) => s.status === "finished" || s.status === "failed" || s.status === "cancelled";

// -- taking in batches --------------------------------------------------------------------
function notify(s) {
  for (const fn of s.listeners) fn();
}

function drain(s) {
  const t0 = performance.now();
  const q = s.queue;
  while (s.qi < q.length) {
    fold(s, q[s.qi++]);
    if ((s.qi & 63) === 0 && performance.now() - t0 > SLICE_MS) break;
  }
  if (s.qi >= q.length) {
    s.queue = [];
    s.qi = 0;
    s.draining = false;
  } else {
    setTimeout(() => drain(s), 0);
  }
  notify(s); // views redraw at their own pace (see redraw)
}

export function enqueue(s, events) {
  for (const e of events) s.queue.push(e);
  if (!s.draining) {
    s.draining = true;
    drain(s);
  }
}

// One message from Python: {type: "events", epoch, first, events, now, control}.
// Returns false when a gap shows events were missed (the caller asks for a replay).
export function receive(s, msg) {
  if (!msg || msg.type !== "events") return true;
  if (msg.epoch !== s.epoch || msg.reset) {
    if (msg.first !== 0) {
      return false; // joined mid-stream: ask for everything
    }
    s.epoch = msg.epoch;
    s.received = 0;
    s.queue = [];
    s.qi = 0;
    resetRun(s);
    s.source = "live";
  }
  if (msg.first !== s.received) return msg.first < s.received; // duplicate or gap
  s.received += msg.events.length;
  if (msg.control) {
    const was = s.control.paused_at;
    s.control = msg.control;
    const answer = msg.control.answer;
    if (answer && s.requests.has(answer.request)) {
      const done = s.requests.get(answer.request);
      s.requests.delete(answer.request);
      done(answer);
    }
    if (was && was.stage === "model_call" && !msg.control.paused_at && typeof msg.now === "number") {
      // the call held at the pause is sent now: its clock starts here
      const last = s.rounds[s.rounds.length - 1];
      if (last && last.call && !last.call.done) last.call.t0 = msg.now;
    }
  }
  if (typeof msg.now === "number") s.clockBase = performance.now() / 1000 - msg.now;
  else s.clockBase = null;
  s.version++;
  enqueue(s, msg.events);
  return true;
}

// The run's clock now (seconds since it started), ticking between messages.
function runNow(s) {
  if (isDone(s) || s.clockBase === null) return s.lastT;
  return Math.max(s.lastT, performance.now() / 1000 - s.clockBase);
}

// Seconds the loop has been held at the pause it waits at now (0 when it does not wait).
function holdingNow(s) {
  const since = s.control.paused_since;
  if (!s.control.paused_at || isDone(s) || typeof since !== "number") return 0;
  return Math.max(0, runNow(s) - since);
}

// A call whose model_call_start came before a pause is not sent until the pause ends.
function held(s, c) {
  const p = s.control.paused_at;
  return !!p && !isDone(s) && p.stage === "model_call" && !c.done && c.round === p.round;
}

// -- what a round reads as ----------------------------------------------------------------
function notRunLabel(t) {
  if (t.answeredByHand) return "answered by you";
  return t.reason ? `not run (${reasonWords(t.reason)})` : "not run";
}
// How the run ended, in the words every view uses (widget/figures.py's outcome).
export function outcomeText(s) {
  if (!s.outcome) return null;
  const end = s.finish || {};
  return outcomeWords(s.outcome, end.synthesis_reason);
}

function roundState(s, r) {
  const live = !isDone(s);
  const p = s.control.paused_at;
  if (live && p && p.round === r.n) return "paused";
  if (live && !r.call && !r.tools.length) return "running";
  if (r.call && r.call.interrupted === "failed") return "error";
  if (live && ((r.call && !r.call.done) || r.tools.some((t) => t.status === "running" || t.status === "queued"))) return "running";
  if (r.tools.some((t) => t.ran && t.status === "error")) return "error";
  if (r.call && r.call.truncated) return "warn";
  if ((r.call && r.call.interrupted === "cancelled") || r.tools.some((t) => t.status === "cancelled") || (r.tools.length && r.tools.every((t) => t.status === "not_run" && t.reason === "cancelled"))) return "stopped";
  if (r.purpose === "synthesis" || (r.call && r.call.done && !r.tools.length)) return "answer";
  if (r.tools.some((t) => t.status === "not_run" && !t.answeredByHand)) return "skipped";
  return "ok";
}
const STATE_WORD = ROUND_STATE;

const shown = (s, n) => n + (s.offset || 0); // a round's number as the person reads it
function roundLabel(s, r) {
  return r.purpose === "synthesis" ? "final" : String(shown(s, r.n));
}
function roundTitle(s, r) {
  if (r.purpose === "synthesis") {
    const why = r.synthesis ? SYNTH[r.synthesis.reason] || r.synthesis.reason : null;
    return why ? `Final answer call (${why})` : "Final answer call";
  }
  return `Round ${nf.format(shown(s, r.n))}`;
}
function roundCost(r) {
  const a = r.call && r.call.usage ? r.call.usage.cost : 0;
  const b = r.pruneUsage.cost;
  return a === null || b === null ? null : a + b;
}
function roundEnd(s, r) {
  let end = r.tLast !== null ? r.tLast : r.t0 || 0;
  const c = r.call;
  if (c) end = Math.max(end, c.t1 !== null ? c.t1 : runNow(s));
  for (const t of r.tools) if (t.ran) end = Math.max(end, t.tEnd !== null ? t.tEnd : t.tStart !== null ? runNow(s) : end);
  for (const p of r.prunings) end = Math.max(end, p.t1 !== null && p.t1 !== undefined ? p.t1 : runNow(s));
  return end;
}
// A round's own time: its span less what pauses held it (RunView's RoundRow.duration_s).
export function roundTime(s, r) {
  return r.t0 === null ? null : Math.max(0, roundEnd(s, r) - r.t0 - r.paused);
}
function haystack(r) {
  if (r.hayV !== r.v) {
    const parts = [r.call ? r.call.text : ""];
    for (const t of r.tools) parts.push(t.name, JSON.stringify(t.args), t.content, t.reason || "");
    if (r.synthesis) parts.push(r.synthesis.prompt);
    r.hay = parts.join("\n").toLowerCase();
    r.hayV = r.v;
  }
  return r.hay;
}
function matches(s, r) {
  const ui = s.ui;
  if (ui.filter === "errors") {
    const st = roundState(s, r);
    if (st !== "error" && st !== "warn") return false;
  }
  if (ui.tool && !r.tools.some((t) => t.name === ui.tool)) return false;
  if (ui.search && !haystack(r).includes(ui.search)) return false;
  return true;
}

// -- DOM helpers (text only: no HTML is ever parsed) --------------------------------------
function h(tag, cls, ...kids) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  for (const k of kids) {
    if (k === null || k === undefined || k === false) continue;
    n.append(typeof k === "string" ? document.createTextNode(k) : k);
  }
  return n;
}
function button(label, cls, onClick, title) {
  const b = h("button", "tl-btn" + (cls ? " " + cls : ""), label);
  b.type = "button";
  if (title) b.title = title;
  b.addEventListener("click", onClick);
  return b;
}
function dropdown(options, label) {
  const sel = h("select", "tl-select");
  for (const [value, text] of options) {
    const o = h("option", null, text);
    o.value = value;
    sel.append(o);
  }
  if (label) sel.setAttribute("aria-label", label);
  return sel;
}
function dot(state) {
  const d = h("span", `tl-dot tl-${state}`);
  d.setAttribute("aria-hidden", "true");
  return d;
}
async function copyText(text, btn) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch (_err) {
    const area = h("textarea", "tl-offscreen");
    area.value = text;
    document.body.append(area);
    area.select();
    try {
      ok = document.execCommand("copy");
    } catch (_e) {
      ok = false;
    }
    area.remove();
  }
  if (btn) {
    const was = btn.textContent;
    btn.textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => (btn.textContent = was), 1200);
  }
}

// A titled block with its own collapse and copy buttons; its open state survives redraws.
function block(s, key, title, body, { copy, open = true, extra } = {}) {
  const collapsed = s.ui.collapsed.has(key) ? s.ui.collapsed.get(key) : !open;
  const wrap = h("section", "tl-block" + (collapsed ? " tl-collapsed" : ""));
  const toggle = h("button", "tl-btn tl-toggle", collapsed ? "Show" : "Hide");
  toggle.type = "button";
  toggle.setAttribute("aria-expanded", String(!collapsed));
  const head = h("div", "tl-block-head", h("span", "tl-block-title", title), extra || null, h("span", "tl-grow"));
  head.append(toggle);
  if (copy !== undefined) head.append(button("Copy", "tl-copy", (ev) => copyText(typeof copy === "function" ? copy() : copy, ev.currentTarget), "Copy to the clipboard"));
  const inner = h("div", "tl-block-body");
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    inner.append(typeof body === "function" ? body() : body);
  };
  if (!collapsed) build();
  toggle.addEventListener("click", () => {
    const now = !wrap.classList.contains("tl-collapsed");
    wrap.classList.toggle("tl-collapsed", now);
    toggle.textContent = now ? "Show" : "Hide";
    toggle.setAttribute("aria-expanded", String(!now));
    s.ui.collapsed.set(key, now);
    if (!now) build();
  });
  wrap.append(head, inner);
  return wrap;
}

function longText(text, cls) {
  const pre = h("pre", "tl-text" + (cls ? " " + cls : ""));
  if (text.length <= PREVIEW_CHARS) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = text.slice(0, PREVIEW_CHARS);
  const more = button(`Show all ${nf.format(text.length)} characters`, "tl-more", () => {
    pre.textContent = text;
    more.remove();
  });
  return h("div", null, pre, more);
}

function parseJson(text) {
  const t = text.trim();
  if (!t || (t[0] !== "{" && t[0] !== "[")) return undefined;
  try {
    return JSON.parse(t);
  } catch (_e) {
    return undefined;
  }
}

// Pretty JSON, each object and array collapsible; deep levels are built when opened.
function jsonView(value, depth = 0) {
  if (value === null || typeof value !== "object") {
    const cls = value === null ? "tl-jnull" : typeof value === "string" ? "tl-jstr" : "tl-jnum";
    return h("span", cls, JSON.stringify(value));
  }
  const isArr = Array.isArray(value);
  const keys = isArr ? value.map((_v, i) => i) : Object.keys(value);
  if (!keys.length) return h("span", "tl-jpunct", isArr ? "[]" : "{}");
  const d = h("details", "tl-json");
  d.open = depth < 2;
  const summary = h("summary", "tl-jpunct", isArr ? `[${plural(keys.length, "item")}]` : `{${plural(keys.length, "key")}}`);
  d.append(summary);
  let built = false;
  const build = () => {
    if (built) return;
    built = true;
    const list = h("div", "tl-jlist");
    for (const k of keys.slice(0, MAX_JSON_ENTRIES)) {
      const line = h("div", "tl-jline");
      if (!isArr) line.append(h("span", "tl-jkey", JSON.stringify(k)), h("span", "tl-jpunct", ": "));
      line.append(jsonView(value[k], depth + 1));
      list.append(line);
    }
    if (keys.length > MAX_JSON_ENTRIES) list.append(h("div", "tl-muted", `… ${plural(keys.length - MAX_JSON_ENTRIES, "more entry", "more entries")}`));
    d.append(list);
  };
  if (d.open) build();
  d.addEventListener("toggle", () => d.open && build());
  return d;
}

function prettyJson(v) {
  try {
    return JSON.stringify(v, null, 2);
  } catch (_e) {
    return String(v);
  }
}

// -- messages as a chat -------------------------------------------------------------------
const ROLE = { human: "User", ai: "Assistant", system: "System", tool: "Tool", AIMessageChunk: "Assistant", HumanMessageChunk: "User" };
function messageText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((b) => (typeof b === "string" ? b : b && typeof b.text === "string" ? b.text : prettyJson(b)))
      .join("\n");
  }
  return content === null || content === undefined ? "" : prettyJson(content);
}
function chatMessage(m) {
  const data = (m && m.data) || {};
  const type = (m && m.type) || data.type || "?";
  const role = ROLE[type] || type;
  const text = messageText(data.content);
  const head = h("div", "tl-msg-head", h("span", "tl-role", role));
  if (type === "tool") {
    head.append(h("span", "tl-msg-meta", `${data.name || "tool"} · ${data.tool_call_id || ""}`));
    if (data.status === "error") head.append(dot("error"), h("span", "tl-msg-meta", "error"));
  }
  const msg = h("div", `tl-msg tl-role-${type}`, head);
  if (text) msg.append(longText(text));
  else if (!(data.tool_calls && data.tool_calls.length)) msg.append(h("div", "tl-muted", "(no text)"));
  for (const tc of data.tool_calls || []) {
    msg.append(h("div", "tl-msg-call", h("span", "tl-msg-meta", `calls ${tc.name} · ${tc.id || ""}`), jsonView(tc.args || {}, 1)));
  }
  return msg;
}

// What a call was sent: earlier messages folded, this call's new ones shown.
function callInput(s, c) {
  const box = h("div", "tl-chat");
  const from = c.msgFrom;
  const to = c.msgTo;
  const earlier = h("div");
  if (from > 0) {
    let shown = from;
    const more = button(`Show ${plural(from, "earlier message")}`, "tl-more", () => {
      const start = Math.max(0, shown - MAX_MESSAGES);
      const frag = document.createDocumentFragment();
      for (let i = start; i < shown; i++) frag.append(chatMessage(s.conversation[i]));
      earlier.prepend(frag);
      shown = start;
      if (shown === 0) more.remove();
      else more.textContent = `Show ${plural(shown, "earlier message")}`;
    });
    box.append(more, earlier);
  }
  const start = Math.max(from, to - MAX_MESSAGES);
  if (start > from) box.append(h("div", "tl-muted", `… ${plural(start - from, "message")} of this call not drawn`));
  for (let i = start; i < to; i++) box.append(chatMessage(s.conversation[i]));
  return box;
}

// At a pause before a model call: what the next call will be sent (the conversation so far
// plus the reply and tool results not yet confirmed by a model_call_start).
function pendingMessages(s) {
  const out = [];
  const last = s.rounds[s.rounds.length - 1];
  if (!last || !last.call || !last.call.done) return out;
  const c = last.call;
  if (c.msgTo !== null && c.msgTo < s.conversation.length) return out;
  out.push({ type: "ai", data: { content: c.text, tool_calls: c.toolCalls.map((t) => ({ name: t.name, args: t.args, id: t.id })) } });
  for (const t of last.tools) {
    if (t.status === "queued" || t.status === "running") continue;
    const content = t.pruned ? t.pruned.pruned : t.content;
    out.push({ type: "tool", data: { content, name: t.name, tool_call_id: t.id, status: t.status === "success" ? "success" : "error" } });
  }
  return out;
}

// -- the view -----------------------------------------------------------------------------
function createView(el, s, host) {
  const root = h("div", "tl-root");
  root.setAttribute("role", "region");
  root.setAttribute("aria-label", "Agent loop debugger");
  el.append(root);
  const live = []; // header nodes whose text ticks: [node, fn]
  let liveRows = []; // timeline rows of rounds in progress
  let liveDetail = []; // the detail pane's timers: [node, paint]

  // header
  const badge = h("span", "tl-badge");
  const title = h("span", "tl-title");
  const roundsInfo = h("span", "tl-meta");
  const elapsed = h("span", "tl-meta tl-num");
  const head1 = h("div", "tl-head", badge, title, roundsInfo, h("span", "tl-grow"), elapsed);
  const activity = h("div", "tl-activity");
  activity.setAttribute("aria-live", "polite");
  const note = h("div", "tl-note");
  // totals
  const totals = h("div", "tl-totals");
  const gauges = h("div", "tl-gauges");
  // controls (live runs only)
  const pauseSel = dropdown([["off", "never"], ["model", "model calls"], ["tools", "tool runs"], ["both", "both"]]);
  pauseSel.addEventListener("change", () => host.setPauseOn(pauseSel.value));
  const pauseLbl = h("label", "tl-lbl", "Pause before ", pauseSel);
  const bContinue = button("Continue", "tl-primary", () => host.control("continue"), "Let the run go on to its end without pausing again");
  const bStep = button("Step", null, () => host.control("step"), "Go on to the next pause point");
  const bStop = button("Stop", null, () => host.control("stop"), "Stop the run; the partial counts stay");
  const controls = h("div", "tl-controls", pauseLbl, bContinue, bStep, bStop);
  const banner = h("div", "tl-banner");
  const bannerText = h("div", "tl-banner-text");
  banner.append(bannerText);

  // timeline toolbar
  const fErrors = dropdown([["all", "all rounds"], ["errors", "errors only"]], "Which rounds");
  const fTool = dropdown([], "Tool");
  const fSearch = h("input", "tl-input");
  fSearch.type = "search";
  fSearch.placeholder = "Search";
  fSearch.setAttribute("aria-label", "Search");
  const jump = h("input", "tl-input tl-jump");
  jump.type = "number";
  jump.min = "1";
  jump.placeholder = "round";
  jump.setAttribute("aria-label", "Round number");
  const jumpBtn = button("Go", null, () => goTo(Number(jump.value)), "Show this round");
  jump.addEventListener("keydown", (ev) => ev.key === "Enter" && goTo(Number(jump.value)));
  const count = h("span", "tl-meta");
  const toolbar = h("div", "tl-toolbar", fErrors, fTool, fSearch, h("span", "tl-jumpbox", jump, jumpBtn), count);
  let searchTimer = null;
  fErrors.addEventListener("change", () => {
    s.ui.filter = fErrors.value;
    redraw(true);
  });
  fTool.addEventListener("change", () => {
    s.ui.tool = fTool.value;
    redraw(true);
  });
  fSearch.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      s.ui.search = fSearch.value.trim().toLowerCase();
      redraw(true);
    }, 150);
  });

  // timeline (virtualised)
  const colHead = h("div", "tl-row tl-colhead", h("span", "tl-c-n", "#"), h("span", "tl-c-state", h("span", null, "status")), h("span", "tl-c-sum", "reply and tools"), h("span", "tl-c-tok tl-num", "tokens in / out"), h("span", "tl-c-cost tl-num", "cost"), h("span", "tl-c-dur tl-num", "duration"));
  colHead.setAttribute("aria-hidden", "true");
  const scroller = h("div", "tl-scroller");
  scroller.tabIndex = 0;
  scroller.setAttribute("role", "listbox");
  scroller.setAttribute("aria-label", "Rounds");
  scroller.style.height = `${ROW_H * TIMELINE_ROWS}px`;
  const spacer = h("div", "tl-spacer");
  scroller.append(spacer);
  const empty = h("div", "tl-empty tl-muted", "No rounds yet.");
  const timeline = h("div", "tl-timeline", colHead, scroller, empty);
  // detail
  const followBtn = button("Follow newest", null, () => {
    s.ui.selected = null;
    s.ui.follow = true;
    redraw(true);
  });
  const detailTitle = h("span", "tl-detail-title");
  const forkBtn = button("Fork from here", null, () => forkHere(), "Run this run again from the selected round, in a new debugger below");
  const forkMsg = h("div", "tl-fork-msg");
  forkMsg.setAttribute("role", "status");
  const detailHead = h("div", "tl-detail-head", detailTitle, h("span", "tl-grow"), forkBtn, followBtn);
  const detailBody = h("div", "tl-detail-body");
  const detail = h("div", "tl-detail", detailHead, forkMsg, detailBody);
  let detailTop = 0;
  detailBody.addEventListener("scroll", () => (detailTop = detailBody.scrollTop), { passive: true });
  const failureBox = h("div", "tl-failure");
  const forkBox = h("div", "tl-forkbox");

  root.append(head1, activity, note, forkBox, totals, gauges, controls, banner, failureBox, toolbar, timeline, detail);

  let filtered = null; // indices of matching rounds, or null for all
  let filterKey = "";
  let lastVersion = -1;
  let detailKey = "";
  let rowsKey = "";
  let raf = 0;
  let tick = 0;
  let userScrolled = false;

  function listLength() {
    return filtered ? filtered.length : s.rounds.length;
  }
  function roundAt(i) {
    return filtered ? s.rounds[filtered[i]] : s.rounds[i];
  }
  function goTo(n) {
    const r = s.byNumber.get(n - (s.offset || 0));
    if (!r) {
      count.textContent = `no round ${isFinite(n) ? n : ""}`;
      return;
    }
    select(r, true);
  }
  function select(r, scroll) {
    s.ui.selected = r.n;
    s.ui.follow = false;
    if (scroll) {
      let i = filtered ? filtered.indexOf(r.index) : r.index;
      if (i < 0) {
        s.ui.filter = "all";
        s.ui.tool = "";
        s.ui.search = "";
        fErrors.value = "all";
        fTool.value = "";
        fSearch.value = "";
        filtered = null;
        filterKey = "";
        i = r.index;
      }
      const top = i * ROW_H;
      if (top < lastTop || top > lastTop + ROW_H * (TIMELINE_ROWS - 1)) {
        lastTop = Math.max(0, top - ROW_H * 2);
        userScrolled = true;
        scroller.scrollTop = lastTop;
      }
    }
    redraw(true);
  }
  let lastTop = 0;
  let programmatic = false;
  scroller.addEventListener("scroll", () => {
    const top = scroller.scrollTop;
    if (programmatic) {
      programmatic = false;
      if (top === lastTop) return;
    }
    userScrolled = top + ROW_H * TIMELINE_ROWS < listLength() * ROW_H - ROW_H;
    lastTop = top;
    drawRows();
  });
  scroller.addEventListener("click", (ev) => {
    const row = ev.target.closest && ev.target.closest(".tl-row");
    if (!row || !row.dataset.n) return;
    const r = s.byNumber.get(Number(row.dataset.n));
    if (r) select(r, false);
  });
  scroller.addEventListener("keydown", (ev) => {
    if (ev.key !== "ArrowDown" && ev.key !== "ArrowUp") return;
    ev.preventDefault();
    const n = listLength();
    if (!n) return;
    const cur = s.ui.selected === null ? n - 1 : indexOfSelected();
    const next = Math.min(n - 1, Math.max(0, cur + (ev.key === "ArrowDown" ? 1 : -1)));
    select(roundAt(next), true);
  });
  function indexOfSelected() {
    const r = s.byNumber.get(s.ui.selected);
    if (!r) return listLength() - 1;
    const i = filtered ? filtered.indexOf(r.index) : r.index;
    return i < 0 ? listLength() - 1 : i;
  }

  function selectedRound() {
    if (s.ui.selected !== null) {
      const r = s.byNumber.get(s.ui.selected);
      if (r) return r;
    }
    return s.rounds[s.rounds.length - 1] || null;
  }

  // Draw on the next frame, at most every DRAW_MS while events stream in (a fast run sends
  // ten batches a second; each draw costs layout); a click draws on the next frame.
  let lastDraw = 0;
  let later = 0;
  function redraw(force) {
    if (force) {
      lastVersion = -1;
      detailKey = "";
      rowsKey = "";
    }
    if (raf || (later && !force)) return;
    const wait = force ? 0 : DRAW_MS - (performance.now() - lastDraw);
    if (wait > 0) {
      later = setTimeout(() => {
        later = 0;
        if (!raf) raf = requestAnimationFrame(draw);
      }, wait);
      return;
    }
    raf = requestAnimationFrame(draw);
  }

  function draw() {
    raf = 0;
    lastDraw = performance.now();
    if (s.version === lastVersion) return;
    lastVersion = s.version;
    drawHeader();
    drawControls();
    drawFilter();
    drawRows();
    drawDetail();
    ticking();
  }

  function ticking() {
    const want = !isDone(s) && s.status !== "idle" && s.clockBase !== null;
    if (want && !tick) tick = setInterval(tickNow, TICK_MS);
    if (!want && tick) {
      clearInterval(tick);
      tick = 0;
      tickNow();
    }
  }
  function tickNow() {
    for (const [node, fn] of live) node.textContent = fn();
    for (const [node, fn] of liveRows) node.textContent = fn();
    for (const [node, fn] of liveDetail) fn(node);
  }

  // header, activity, totals, gauges
  function drawHeader() {
    const st = s.status;
    const words = { idle: "Waiting for a run", running: "Running", paused: "Paused", finished: "Finished", failed: "Failed", cancelled: "Stopped" };
    let state = st;
    if (st === "running" && s.control.paused_at) state = "paused";
    badge.textContent = "";
    const badgeState = state === "finished" ? "answer" : state === "failed" ? "error" : state === "cancelled" ? "stopped" : state === "paused" ? "warn" : state === "running" ? "running" : "idle";
    badge.append(dot(badgeState), h("span", null, words[state] || state));
    badge.className = `tl-badge tl-b-${badgeState}`;
    const run = s.run;
    title.textContent = run ? [run.name, run.model].filter(Boolean).join(" · ") || "agent run" : "";
    let toolRounds = s.rounds.length;
    for (let i = s.rounds.length - 1; i >= 0 && i >= s.rounds.length - 3; i--) if (s.rounds[i].purpose !== "round") toolRounds--;
    const off = s.offset || 0;
    let ri = run && run.maxRounds ? `round ${nf.format(toolRounds + off)} of ${nf.format(run.maxRounds + off)}` : s.rounds.length ? `${plural(toolRounds, "round")}` : "";
    if (s.rounds.length && s.rounds[s.rounds.length - 1].purpose === "synthesis") ri += " + final answer call";
    roundsInfo.textContent = ri;
    live.length = 0;
    const elapsedText = () => {
      if (s.status === "idle") return "";
      // the run's own time: what pauses held it is a person's time, shown on its own
      const held = s.paused + holdingNow(s);
      const own = isDone(s) ? `took ${duration(s.lastT - held)}` : `elapsed ${duration(runNow(s) - held)}`;
      return s.pauses || (s.control.paused_at && !isDone(s)) ? `${own} · paused ${duration(held)}` : own;
    };
    elapsed.textContent = elapsedText();
    live.push([elapsed, elapsedText]);
    activity.textContent = "";
    activity.className = "tl-activity";
    drawActivity();
    note.textContent = s.control.note || "";
    note.hidden = !s.control.note;
    drawTotals();
  }

  function drawActivity() {
    const done = isDone(s);
    if (s.status === "idle") {
      activity.append(h("span", "tl-muted", "Display this, then run the agent (or start it with dbg.start(agent, prompt))."));
      return;
    }
    if (done) {
      let text = outcomeText(s) || s.outcome;
      if (s.status === "cancelled" && s.control.stopped_by_user) text = "Stopped by you";
      if (s.finish && s.finish.final_text !== undefined) {
        activity.append(h("span", "tl-strong", `${text}: `));
        if (s.finish.final_text) activity.append(h("span", "tl-final", s.finish.final_text.length > 300 ? s.finish.final_text.slice(0, 300) + "…" : s.finish.final_text));
        else activity.append(h("span", "tl-muted", "(no text)"));
      } else {
        activity.append(h("span", "tl-strong", text));
      }
      return;
    }
    const last = s.rounds[s.rounds.length - 1];
    const items = [];
    if (s.control.paused_at) items.push(["warn", () => "waiting for you: Step, Continue or Stop"]);
    if (last) {
      const c = last.call;
      if (c && !c.done && c.t0 !== null && !c.interrupted && !held(s, c)) {
        items.push(["running", () => `${c.purpose === "synthesis" ? "asking for the final answer from" : "calling"} ${c.model || "the model"}… ${duration(runNow(s) - c.t0)}`]);
      }
      for (const p of last.prunings) if (!p.done && p.t0 !== null) items.push(["running", () => `pruning a ${lastToolName(last, p.toolCallId)} output… ${duration(runNow(s) - p.t0)}`]);
      for (const t of last.tools) if (t.status === "running") items.push(["running", () => `running ${t.name}… ${duration(runNow(s) - t.tStart)}`]);
      const queued = last.tools.filter((t) => t.status === "queued").length;
      if (queued && !last.tools.some((t) => t.status === "running")) items.push(["idle", () => `${plural(queued, "tool call")} waiting to run`]);
    }
    if (!items.length) items.push(["idle", () => "working…"]);
    for (const [state, fn] of items) {
      const span = h("span", "tl-act-item");
      const txt = h("span", "tl-num", fn());
      span.append(dot(state), txt);
      live.push([txt, fn]);
      activity.append(span);
    }
  }
  function lastToolName(r, id) {
    const t = r.toolById.get(id);
    return t ? t.name : "tool";
  }

  function drawTotals() {
    const t = s.totals;
    totals.textContent = "";
    const item = (label, value, sub) => h("span", "tl-total", h("span", "tl-total-label", label), h("span", "tl-total-value tl-num", value), sub ? h("span", "tl-total-sub tl-num", sub) : null);
    totals.append(item("input", `${tokens(t.input)} tokens`, t.cacheRead ? `${tokens(t.cacheRead)} from cache` : "none from cache"));
    totals.append(item("output", `${tokens(t.output)} tokens`));
    let split = null;
    if (t.costIn !== null || t.costOut !== null) split = `input ${usd(t.costIn)} · output ${usd(t.costOut)}`;
    totals.append(item("cost", usd(t.cost), split));
    if (t.estimated) totals.append(h("span", "tl-muted", "some counts estimated"));
    gauges.textContent = "";
    const run = s.run;
    if (!run) return;
    const gauge = (label, spent, limit, fmt, state, explain) => {
      const frac = limit ? spent / limit : null;
      const bar = h("span", "tl-bar");
      const fill = h("span", `tl-fill tl-g-${state}`);
      fill.style.width = `${Math.min(100, Math.max(0, (frac || 0) * 100)).toFixed(1)}%`;
      bar.append(fill);
      bar.setAttribute("aria-hidden", "true");
      const g = h("div", "tl-gauge", h("span", "tl-gauge-label", label), bar, h("span", "tl-num", limit ? `${fmt(spent)} of ${fmt(limit)} (${pct(frac)})` : fmt(spent)));
      if (state !== "off") g.append(h("span", `tl-gate tl-gate-${state}`, state === "tripped" ? "limit reached" : "within limit"));
      if (explain) g.title = explain;
      gauges.append(g);
    };
    if (run.tokenBudget !== null && run.tokenBudget !== undefined) gauge("token budget", t.input + t.output, run.tokenBudget, tokens, s.tokenGate, "Tokens spent by every call (input + output) against the run's token budget");
    if (run.usdLimit !== null && run.usdLimit !== undefined) gauge(GATE_NAME.usd, t.cost || 0, run.usdLimit, usd, s.usdGate, "Cost so far against the USD limit");
    if (run.contextWindow) gauge("context", s.lastContext, run.contextWindow, tokens, "off", "Input tokens of the latest model call against the context window");
  }

  function drawControls() {
    const isLive = !!host.live && s.source !== "static";
    controls.hidden = !isLive;
    const paused = !!s.control.paused_at && !isDone(s);
    const running = !!s.control.running && !isDone(s);
    bContinue.disabled = !paused;
    bStep.disabled = !paused;
    bStop.disabled = !(paused || running);
    const mode = host.pauseOn();
    if (pauseSel.value !== mode) pauseSel.value = mode;
    banner.hidden = !paused;
    bannerText.textContent = "";
    if (paused) {
      const p = s.control.paused_at;
      let where;
      if (p.stage === "tool_dispatch") where = `Paused before running ${(p.detail || []).length ? (p.detail || []).join(", ") : "the tools"} in round ${nf.format(shown(s, p.round))}.`;
      else if (p.purpose === "synthesis") where = "Paused before the final-answer call.";
      else if (p.purpose === "pruning") where = `Paused before pruning a tool output in round ${nf.format(shown(s, p.round))}.`;
      else where = `Paused before calling the model in round ${nf.format(shown(s, p.round))}.`;
      bannerText.append(h("span", "tl-strong", where), " Step goes on to the next pause; Continue runs to the end.");
      if (p.editable) {
        const can = p.stage === "tool_dispatch" ? "You can edit a call's arguments or answer it yourself (below)." : (p.results || []).length ? "You can add a message or edit a result the model has not seen (below)." : "You can add a message (below).";
        bannerText.append(" ", h("span", "tl-meta", can));
      }
    }
    failureBox.textContent = "";
    failureBox.hidden = !s.failure;
    if (s.failure) {
      const f = s.failure;
      const stopped = f.cancelled;
      failureBox.className = `tl-failure ${stopped ? "tl-stopped-box" : "tl-error-box"}`;
      const head = stopped ? (s.control.stopped_by_user ? "Stopped by you" : "Cancelled") : s.outcome === "usd_budget_exhausted" ? OUTCOME.usd_budget_exhausted : "The run failed";
      failureBox.append(h("div", "tl-strong", `${head} after ${plural(f.rounds, "round")}`));
      const facts = [f.error_type, f.error_kind && `kind ${f.error_kind}`, f.reason && `reason ${f.reason}`, f.cause_type && `cause ${f.cause_type}`].filter(Boolean).join(" · ");
      failureBox.append(h("div", "tl-meta", facts));
      if (f.message && !stopped) failureBox.append(longText(f.message));
      if (f.partial_text) failureBox.append(h("div", "tl-meta", "Text streamed before it stopped:"), longText(f.partial_text));
    }
  }

  function drawFilter() {
    const names = [...s.toolNames].sort();
    const key = names.join("\u0000");
    if (fTool.dataset.key !== key) {
      fTool.dataset.key = key;
      const cur = s.ui.tool;
      fTool.textContent = "";
      const all = h("option", null, "all tools");
      all.value = "";
      fTool.append(all);
      for (const n of names) {
        const o = h("option", null, n);
        o.value = n;
        fTool.append(o);
      }
      fTool.value = names.includes(cur) ? cur : "";
    }
    fErrors.value = s.ui.filter;
    const active = s.ui.filter !== "all" || s.ui.tool || s.ui.search;
    if (!active) filtered = null;
    else {
      const k = `${s.ui.filter}|${s.ui.tool}|${s.ui.search}|${s.version}`;
      if (k !== filterKey) {
        filterKey = k;
        filtered = [];
        for (let i = 0; i < s.rounds.length; i++) if (matches(s, s.rounds[i])) filtered.push(i);
      }
    }
    const n = listLength();
    count.textContent = active ? `${plural(n, "round")} of ${nf.format(s.rounds.length)}` : s.rounds.length ? plural(s.rounds.length, "round") : "";
    empty.hidden = n > 0;
    empty.textContent = s.rounds.length ? "No round matches." : "No rounds yet.";
  }

  function drawRows() {
    const n = listLength();
    if (s.source === "static" && isDone(s) && !s.draining) {
      // a finished run on a page: nothing will grow, so no empty rows below the last
      scroller.style.height = `${ROW_H * Math.max(2, Math.min(TIMELINE_ROWS, s.rounds.length))}px`;
    }
    spacer.style.height = `${n * ROW_H}px`;
    let top = lastTop;
    if (s.ui.follow && !userScrolled) {
      top = Math.max(0, n * ROW_H - ROW_H * TIMELINE_ROWS);
      if (top !== lastTop) {
        programmatic = true;
        scroller.scrollTop = top;
      }
    }
    lastTop = top;
    const first = Math.max(0, Math.floor(top / ROW_H) - 2);
    const last = Math.min(n, first + TIMELINE_ROWS + 4);
    const sel = selectedRound();
    const key = `${first}:${last}:${n}:${s.version}:${sel ? sel.n : ""}`;
    if (key === rowsKey) return;
    rowsKey = key;
    liveRows = [];
    const frag = document.createDocumentFragment();
    for (let i = first; i < last; i++) frag.append(rowFor(roundAt(i), i, sel));
    spacer.replaceChildren(frag);
  }

  function rowFor(r, i, sel) {
    const st = roundState(s, r);
    const row = h("div", `tl-row tl-st-${st}` + (sel === r ? " tl-selected" : ""));
    row.dataset.n = String(r.n);
    row.style.top = `${i * ROW_H}px`;
    row.setAttribute("role", "option");
    row.setAttribute("aria-selected", String(sel === r));
    const c = r.call;
    const sum = h("span", "tl-c-sum");
    if (!c && !isDone(s)) sum.append(h("span", "tl-muted", st === "paused" ? "paused before the model call" : "about to call the model"));
    if (c) {
      const text = c.text || "";
      if (text) sum.append(h("span", "tl-sum-text", text.slice(0, 160)));
      else if (c.done) sum.append(h("span", "tl-muted", "(no text)"));
      else if (c.interrupted) sum.append(h("span", "tl-muted", c.interrupted === "cancelled" ? "no reply: stopped" : "no reply: the run failed"));
      else sum.append(h("span", "tl-muted", held(s, c) ? "paused before the call" : "waiting for the reply"));
    }
    if (r.tools.length) {
      const tl = h("span", "tl-sum-tools");
      for (const t of r.tools.slice(0, 6)) tl.append(h("span", `tl-chip tl-chip-${t.status}`, dot(toolDot(t)), t.name));
      if (r.tools.length > 6) tl.append(h("span", "tl-meta", `+${r.tools.length - 6}`));
      sum.append(tl);
    }
    const net = r.tools.reduce((a, t) => a + (t.pruned ? t.pruned.net : 0), 0);
    if (r.tools.some((t) => t.pruned)) sum.append(h("span", "tl-chip", net < 0 ? `pruning lost ${tokens(-net)}` : `pruned −${tokens(net)}`));
    if (r.gates.some((g) => !g.passed)) sum.append(h("span", "tl-chip tl-chip-error", dot("error"), "limit reached"));
    if (r.interventions.length) sum.append(h("span", "tl-chip tl-chip-hand", dot("warn"), "changed by you"));
    if (r.pauses.length) sum.append(h("span", "tl-chip tl-chip-paused", dot("paused"), `paused ${duration(r.paused)}`));
    const u = c && c.usage;
    const cost = roundCost(r);
    const dur = h("span", "tl-c-dur tl-num");
    // the round's own time: what a pause held it is its own segment, never part of it
    if (st === "running") {
      const fn = () => duration(runNow(s) - (r.t0 || 0) - r.paused);
      dur.textContent = fn();
      liveRows.push([dur, fn]);
    } else dur.textContent = r.t0 === null || (!c && !r.tools.length) ? "—" : duration(roundTime(s, r));
    row.append(
      h("span", "tl-c-n tl-num", roundLabel(s, r)),
      h("span", "tl-c-state", dot(st), h("span", null, STATE_WORD[st])),
      sum,
      h("span", "tl-c-tok tl-num", u ? `${tokens(u.input)} / ${tokens(u.output)}` : "—"),
      h("span", "tl-c-cost tl-num", u ? usd(cost) : "—"),
      dur,
    );
    return row;
  }
  function toolDot(t) {
    return t.status === "success" ? "answer" : t.status === "error" ? "error" : t.status === "running" ? "running" : t.status === "cancelled" ? "stopped" : "idle";
  }
  // a tool that had begun when the run was stopped (or ended): it ran, and was cut short
  function cutShortLabel(t) {
    return CUT_SHORT[t.reason === "unfinished" ? "unfinished" : "cancelled"];
  }

  // the selected round: waterfall, what was sent, the reply, each tool
  function forkHere() {
    const r = selectedRound();
    if (!r) return;
    s.ui.forkMsg = { n: r.n, state: "idle", text: `Forking at ${roundTitle(s, r).toLowerCase()}…` };
    forkBtn.disabled = true;
    drawForkMsg();
    ask({ type: "fork", round: r.n }, (a) => {
      s.ui.forkMsg = a.ok
        ? { n: r.n, state: "ok", text: `Forked at ${roundTitle(s, r).toLowerCase()}: ${a.message}.` }
        : { n: r.n, state: "error", text: `Cannot fork here (${a.reason}): ${a.message}` };
      redraw(true);
    });
  }

  function drawForkMsg() {
    const r = selectedRound();
    const m = s.ui.forkMsg;
    forkMsg.textContent = "";
    forkMsg.hidden = !(m && r && m.n === r.n);
    if (!forkMsg.hidden) forkMsg.append(dot(m.state === "error" ? "error" : m.state === "ok" ? "answer" : "idle"), h("span", null, m.text));
  }

  function drawFork() {
    // "Fork from here": on a finished (or replayed) run shown by a kernel-backed widget
    const can = !!host.canFork();
    const r = selectedRound();
    forkBtn.hidden = !(host.forking && isDone(s) && r);
    forkBtn.disabled = !can || (s.ui.forkMsg && s.ui.forkMsg.state === "idle");
    forkBtn.title = can ? "Run this run again from the selected round, in a new debugger below" : "This debugger knows no agent to fork with: open it with LoopDebugger.from_trace(path, fork_with=agent)";
    drawForkMsg();
    // a fork's own debugger: where it came from, and the two runs side by side at its end
    const info = s.forkInfo;
    forkBox.textContent = "";
    forkBox.hidden = !info || info.at_round === undefined;
    if (forkBox.hidden) return;
    const from = { result: "a run", events: "a run", trace: "a trace", recording: "a recording" }[info.source] || "a run";
    forkBox.append(h("div", null, h("span", "tl-strong", `Fork of ${from} at round ${nf.format(info.at_round)}.`), " ", h("span", "tl-meta", `Rounds before it were taken from the original; rounds are numbered as in the original.`)));
    if (info.comparison) forkBox.append(block(s, "fork:cmp", "The fork next to the original", () => comparisonView(info.comparison), { copy: () => info.comparison.summary || "" }));
  }

  function comparisonView(c) {
    const cost = usd;
    const delta = (v, fmt) => (v === null || v === undefined ? "—" : `${v > 0 ? "+" : v < 0 ? "−" : "±"}${fmt(Math.abs(v))}`);
    const box = h("div");
    const totals = h("table", "tl-cmp tl-num");
    const row = (cells, head) => h("tr", null, ...cells.map((x) => h(head ? "th" : "td", null, x)));
    const o = c.original;
    const f = c.fork;
    const outcome = (x) => (OUTCOME[x.outcome] || x.outcome) + (x.reason ? ` (${SYNTH[x.reason] || x.reason})` : "");
    totals.append(
      row(["", "original", "fork", "change"], true),
      row(["outcome", outcome(o), outcome(f), ""]),
      row(["rounds", nf.format(o.rounds), nf.format(f.rounds), delta(f.rounds - o.rounds, nf.format)]),
      row(["tokens", tokens(o.input_tokens + o.output_tokens), tokens(f.input_tokens + f.output_tokens), delta(c.tokens_delta, tokens)]),
      row(["cost", cost(o.cost_usd), cost(f.cost_usd), c.cost_delta_usd === null ? "—" : delta(Number(c.cost_delta_usd), usd)]),
    );
    const per = h("table", "tl-cmp tl-num");
    per.append(row(["round", "original", "fork", "change"], true));
    // each side on up to three short lines, so the table fits a narrow notebook
    const side = (x) => {
      if (!x) return "—";
      const what = x.outcome === "tools" ? plural(x.tool_calls, "tool call") : OUTCOME[x.outcome] || x.outcome;
      return h("span", "tl-cmp-cell", h("span", null, `${tokens(x.tokens)} tokens`), h("span", null, cost(x.cost_usd)), h("span", "tl-meta", what));
    };
    for (const pr of c.rounds) {
      const final = (pr.fork && pr.fork.purpose === "synthesis") || (pr.original && pr.original.purpose === "synthesis");
      const label = h("span", "tl-cmp-cell", h("span", null, nf.format(pr.round) + (final ? " (final)" : "")), pr.taken ? h("span", "tl-meta", "taken") : null);
      const change = pr.taken ? h("span", "tl-meta", "same") : h("span", "tl-cmp-cell", h("span", null, `${delta(pr.tokens_delta, tokens)} tokens`), h("span", null, pr.cost_delta_usd === null ? "—" : delta(Number(pr.cost_delta_usd), usd)));
      per.append(row([label, side(pr.original), side(pr.fork), change]));
    }
    box.append(h("div", "tl-scroll-x", totals), h("div", "tl-sub", "Round by round"), h("div", "tl-scroll-x", per));
    if (c.error) box.append(h("div", "tl-flag", dot("error"), `The fork stopped with ${c.error}.`));
    return box;
  }

  function drawDetail() {
    drawFork();
    const r = selectedRound();
    followBtn.hidden = s.ui.follow || s.ui.selected === null;
    const paused = s.control.paused_at && !isDone(s) ? JSON.stringify(s.control.paused_at) : "";
    if (s.ui.edit && (!paused || s.ui.edit.pause !== s.control.paused_at.pause)) s.ui.edit = null; // the loop went on
    const key = r ? `${r.n}:${r.v}:${paused}:${s.conversation.length}:${s.status}` : `none:${s.status}`;
    if (key === detailKey) return;
    const sameRound = detailKey.split(":")[0] === (r ? String(r.n) : "none");
    detailKey = key;
    const scrollTop = detailTop; // kept by a scroll listener: no layout read while drawing
    liveDetail = [];
    detailBody.textContent = "";
    if (!r) {
      detailTitle.textContent = "Round details";
      detailBody.append(h("div", "tl-muted", "The selected round shows here: what the model was sent, its reply, each tool call and its result."));
      if (paused) detailBody.append(aboutToSend());
      return;
    }
    detailTitle.textContent = roundTitle(s, r) + (s.ui.follow || s.ui.selected === null ? " (newest)" : "");
    detailBody.append(waterfall(r));
    const c = r.call;
    const newest = r === s.rounds[s.rounds.length - 1];
    const pausedBeforeCall = paused && s.control.paused_at.stage === "model_call" && newest;
    if (pausedBeforeCall && !(c && !c.done && c.msgFrom !== null)) detailBody.append(aboutToSend());
    if (paused && s.control.paused_at.stage === "tool_dispatch" && newest && s.control.paused_at.calls) detailBody.append(aboutToRun());
    if (r.synthesis) detailBody.append(block(s, `r${r.n}:synth`, "Why a final-answer call", () => h("div", null, h("div", "tl-meta", `Reason: ${SYNTH[r.synthesis.reason] || r.synthesis.reason}`), longText(r.synthesis.prompt)), { copy: r.synthesis.prompt, open: false }));
    if (c && c.msgFrom !== null) {
      const n = c.msgTo - c.msgFrom;
      const verb = pausedBeforeCall && !c.done ? "About to send" : "Sent to the model";
      detailBody.append(block(s, `r${r.n}:in`, `${verb} (${plural(c.msgTo, "message")}, ${nf.format(n)} new)`, () => callInput(s, c), { copy: () => prettyJson(s.conversation.slice(0, c.msgTo)) }));
    } else if (c) {
      detailBody.append(h("div", "tl-muted tl-pad", "This trace does not record what the model was sent (it predates model_call_start events)."));
    }
    if (c) detailBody.append(replyBlock(r, c));
    for (const t of r.tools) detailBody.append(toolBlock(r, t));
    if (r.gates.length) detailBody.append(block(s, `r${r.n}:gates`, "Budget checks", () => gatesView(r), { open: r.gates.some((g) => !g.passed) }));
    if (r.interventions.length) detailBody.append(block(s, `r${r.n}:iv`, "Changed by you", () => interventionsView(r), { copy: () => prettyJson(r.interventions) }));
    if (sameRound && scrollTop) detailBody.scrollTop = scrollTop;
    else detailTop = 0;
  }

  function aboutToSend() {
    const p = s.control.paused_at || {};
    if (Array.isArray(p.messages)) {
      // exactly what the loop will send (its newest messages), as the pause point says
      const total = p.message_count || p.messages.length;
      const results = new Set(p.results || []);
      return block(s, "pause:send", `About to send (${plural(total, "message")})`, () => {
        const box = h("div", "tl-chat");
        if (total > p.messages.length) box.append(h("div", "tl-meta", `the newest ${nf.format(p.messages.length)} of ${plural(total, "message")}:`));
        for (const m of p.messages) {
          const data = (m && m.data) || {};
          const id = data.tool_call_id;
          const editable = p.editable && m.type === "tool" && results.has(id);
          const e = s.ui.edit;
          if (editable && e && e.kind === "result" && e.callId === id) {
            box.append(h("div", "tl-msg tl-role-tool", h("div", "tl-msg-head", h("span", "tl-role", "Tool"), h("span", "tl-msg-meta", `${data.name || "tool"} · ${id}`)), editorView(e)));
            continue;
          }
          const msg = chatMessage(m);
          if (editable) {
            const text = messageText(data.content);
            msg.append(h("div", "tl-edit-actions", button("Edit result…", null, () => openEditor({ kind: "result", pause: p.pause, callId: id, name: data.name || "tool", text, status: data.status === "error" ? "error" : "success" }), "Replace this result before the model reads it")));
          }
          box.append(msg);
        }
        if (p.editable) {
          const e = s.ui.edit;
          if (e && e.kind === "message") box.append(editorView(e));
          else box.append(h("div", "tl-edit-actions", button("Add message…", null, () => openEditor({ kind: "message", pause: p.pause, text: "", role: "user" }), "Add a message to the conversation before this call")));
        }
        return box;
      }, { copy: () => prettyJson(p.messages) });
    }
    const pending = pendingMessages(s);
    return block(s, "pause:send", "About to send", () => {
      const box = h("div", "tl-chat");
      const n = s.conversation.length;
      box.append(h("div", "tl-meta", `${plural(n + pending.length, "message")} in all; the newest:`));
      const start = Math.max(0, n - 4);
      for (let i = start; i < n; i++) box.append(chatMessage(s.conversation[i]));
      for (const m of pending) box.append(chatMessage(m));
      return box;
    }, { copy: () => prettyJson([...s.conversation, ...pending]) });
  }

  function aboutToRun() {
    const p = s.control.paused_at || {};
    const calls = p.calls || [];
    return block(s, "pause:run", `About to run (${plural(calls.length, "tool call")})`, () => {
      const box = h("div", "tl-chat");
      for (const c of calls) {
        const line = h("div", "tl-msg tl-role-tool", h("div", "tl-msg-head", h("span", "tl-role", c.name), h("span", "tl-msg-meta", c.id)));
        if (c.valid === false) line.append(h("div", "tl-flag", dot("error"), `the model's arguments could not be read${c.error ? `: ${c.error}` : ""}`));
        const e = s.ui.edit;
        if (e && e.callId === c.id && (e.kind === "args" || e.kind === "skip")) line.append(editorView(e));
        else {
          line.append(jsonView(c.args || {}, 1));
          if (p.editable) {
            line.append(
              h(
                "div",
                "tl-edit-actions",
                button("Edit arguments…", null, () => openEditor({ kind: "args", pause: p.pause, callId: c.id, name: c.name, text: prettyJson(c.args || {}) }), "Run this call with other arguments (checked against the tool's schema)"),
                button("Skip with result…", null, () => openEditor({ kind: "skip", pause: p.pause, callId: c.id, name: c.name, text: "", status: "success" }), "Do not run this call; the model reads what you write as its result"),
              ),
            );
          }
        }
        box.append(line);
      }
      return box;
    }, { copy: () => prettyJson(calls) });
  }

  // -- requests to Python: checked there, answered with the next message ------------------
  function ask(msg, onAnswer) {
    const id = s.nextRequest++;
    s.requests.set(id, onAnswer);
    host.send({ ...msg, request: id });
  }

  function openEditor(edit) {
    s.ui.edit = { ...edit, msg: "", msgKind: "idle", focus: true };
    redraw(true);
  }
  function closeEditor() {
    s.ui.edit = null;
    redraw(true);
  }

  function parseArgs(text) {
    let value;
    try {
      value = JSON.parse(text);
    } catch (err) {
      return { error: `Not valid JSON: ${err && err.message ? err.message : "cannot be read"}` };
    }
    if (value === null || typeof value !== "object" || Array.isArray(value)) return { error: 'The arguments must be a JSON object, like {"path": "a.txt"}.' };
    return { value };
  }

  const EDITORS = {
    args: { title: (e) => `Edit the arguments of ${e.name} (${e.callId})`, label: "Arguments (JSON)", apply: "Run with these arguments" },
    skip: { title: (e) => `Answer ${e.name} (${e.callId}) yourself`, label: "The result the model reads", apply: "Skip the tool" },
    result: { title: (e) => `Replace the result of ${e.name} (${e.callId})`, label: "The result the model reads", apply: "Replace the result" },
    message: { title: () => "Add a message before this call", label: "Message", apply: "Add the message" },
  };

  function editorView(e) {
    const kind = EDITORS[e.kind];
    const box = h("div", "tl-editor");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", kind.title(e));
    box.append(h("div", "tl-sub", kind.title(e)));
    const area = h("textarea", "tl-textarea" + (e.kind === "args" ? " tl-code" : ""));
    area.value = e.text;
    area.spellcheck = false;
    area.rows = Math.min(12, Math.max(3, e.text.split("\n").length + 1));
    area.setAttribute("aria-label", kind.label);
    const status = h("div", "tl-edit-msg");
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    e.show = (state, text) => {
      e.msgKind = state;
      e.msg = text;
      status.textContent = "";
      status.className = `tl-edit-msg tl-edit-${state}`;
      if (text) status.append(dot(state === "error" ? "error" : state === "ok" ? "answer" : "idle"), h("span", null, text));
    };
    e.show(e.msgKind || "idle", e.msg || "");
    area.addEventListener("input", () => {
      e.text = area.value;
      if (e.kind === "args") checkSoon(e);
    });
    const extras = h("div", "tl-edit-row");
    if (e.kind === "skip" || e.kind === "result") {
      const sel = dropdown([["success", "as a success"], ["error", "as an error"]], "Status of the result");
      sel.value = e.status || "success";
      sel.addEventListener("change", () => (e.status = sel.value));
      extras.append(h("label", "tl-lbl", "The model reads it ", sel));
    }
    if (e.kind === "message") {
      const sel = dropdown([["user", "user"], ["assistant", "assistant"]], "Who says it");
      sel.value = e.role || "user";
      sel.addEventListener("change", () => (e.role = sel.value));
      extras.append(h("label", "tl-lbl", "From the ", sel));
    }
    const apply = button(kind.apply, "tl-primary", () => submit(e, apply));
    const cancel = button("Cancel", null, closeEditor);
    extras.append(h("span", "tl-grow"), apply, cancel);
    box.append(area, status, extras);
    if (e.focus) {
      e.focus = false;
      requestAnimationFrame(() => area.isConnected && area.focus());
    }
    return box;
  }

  let checkTimer = 0;
  function checkSoon(e) {
    clearTimeout(checkTimer);
    checkTimer = setTimeout(() => {
      if (s.ui.edit !== e) return;
      const parsed = parseArgs(e.text);
      if (parsed.error) return e.show("error", parsed.error);
      const sent = e.text;
      ask({ type: "intervene", action: "check_args", pause: e.pause, call_id: e.callId, args: parsed.value }, (a) => {
        if (s.ui.edit !== e || e.text !== sent) return; // typed on since: a newer check follows
        e.show(a.ok ? "ok" : "error", a.ok ? "These arguments fit the tool's schema." : a.message);
      });
    }, 300);
  }

  function submit(e, btn) {
    const msg = { type: "intervene", pause: e.pause };
    if (e.kind === "args") {
      const parsed = parseArgs(e.text);
      if (parsed.error) return e.show("error", parsed.error);
      Object.assign(msg, { action: "edit_args", call_id: e.callId, args: parsed.value });
    } else if (e.kind === "skip") {
      Object.assign(msg, { action: "skip", call_id: e.callId, content: e.text, status: e.status || "success" });
    } else if (e.kind === "result") {
      Object.assign(msg, { action: "edit_result", call_id: e.callId, content: e.text, status: e.status || "success" });
    } else {
      if (!e.text.trim()) return e.show("error", "Write the message first.");
      Object.assign(msg, { action: "append_message", role: e.role || "user", content: e.text });
    }
    clearTimeout(checkTimer);
    btn.disabled = true;
    e.show("idle", "Sending…");
    ask(msg, (a) => {
      btn.disabled = false;
      if (s.ui.edit !== e) return;
      if (a.ok) return closeEditor(); // the change comes back as an intervention event
      e.show("error", `Refused (${a.reason}): ${a.message} — the run is unchanged and still paused.`);
    });
  }

  function replyBlock(r, c) {
    const body = () => {
      const box = h("div");
      const facts = h("div", "tl-facts tl-num");
      const u = c.usage;
      if (u) {
        facts.append(h("span", null, `${tokens(u.input)} in${u.cacheRead ? ` (${tokens(u.cacheRead)} cached)` : ""}`), h("span", null, `${tokens(u.output)} out`), h("span", null, usd(u.cost)));
        if (u.costIn !== null || u.costOut !== null) facts.append(h("span", null, `input ${usd(u.costIn)} · output ${usd(u.costOut)}`));
      }
      if (c.latency !== null && c.latency !== undefined) facts.append(h("span", null, `response time ${duration(c.latency)} (request sent to whole reply)`));
      if (c.firstToken !== null && c.firstToken !== undefined) facts.append(h("span", null, `first token after ${duration(c.firstToken)}`));
      if (c.finish) facts.append(h("span", null, `finish reason ${c.finish}`));
      if (c.model) facts.append(h("span", null, c.model));
      box.append(facts);
      const flags = [];
      if (c.stuck) flags.push("same tool calls as the previous round: no progress");
      if (c.truncated) flags.push("cut off by the output-token limit: its tool calls were not run");
      if (c.empty) flags.push("no text and no tool call");
      if (c.interrupted) flags.push(c.interrupted === "cancelled" ? "stopped before the reply came back" : c.error ? `the call failed: ${c.error.type}${c.error.message ? `: ${c.error.message}` : ""}` : "the run failed before the reply came back");
      const earlier = r.failedCalls.length - (c.error && c.interrupted === "failed" ? 1 : 0);
      if (earlier > 0 && c.done) flags.push(`${plural(earlier, "earlier attempt")} of this call failed (${r.failedCalls.slice(0, earlier).map((f) => f.type).join(", ")}); this is the retry's reply`);
      for (const f of flags) box.append(h("div", "tl-flag", dot("warn"), f));
      const text = c.text;
      if (text) box.append(longText(text, c.done ? "" : "tl-streaming"));
      else if (c.done) box.append(h("div", "tl-muted", "(no text)"));
      else if (held(s, c)) box.append(h("div", "tl-muted", "not sent yet: the run is paused before this call"));
      else if (!c.interrupted) {
        const wait = h("div", "tl-muted tl-num");
        const fn = (node) => (node.textContent = `waiting for the reply… ${duration(runNow(s) - (c.t0 || 0))}`);
        fn(wait);
        liveDetail.push([wait, fn]);
        box.append(wait);
      }
      const frags = c.done ? [] : c.fragments.filter(Boolean);
      for (const f of frags) box.append(h("div", "tl-msg-call", h("span", "tl-msg-meta", `calling ${f.name || "a tool"} (arguments so far)`), h("pre", "tl-text tl-streaming", f.args)));
      if (c.toolCalls.length) {
        const calls = h("div", "tl-calls");
        for (const tc of c.toolCalls) calls.append(h("div", "tl-msg-call", h("span", "tl-msg-meta", `calls ${tc.name} · ${tc.id}${tc.valid === false ? " · invalid arguments" : ""}`), jsonView(tc.args || {}, 1)));
        box.append(calls);
      }
      return box;
    };
    const label = c.done ? "Reply" : c.interrupted ? "Reply (never came back)" : held(s, c) ? "Reply (not sent yet)" : c.streaming ? "Reply (streaming)" : "Reply (waiting)";
    return block(s, `r${r.n}:reply:${c.done ? 1 : 0}`, label, body, { copy: () => c.text || "" });
  }

  function toolBlock(r, t) {
    const body = () => {
      const box = h("div");
      const facts = h("div", "tl-facts tl-num");
      if (t.status === "not_run") facts.append(h("span", null, notRunLabel(t)));
      else {
        const cut = t.status === "cancelled";
        facts.append(h("span", null, t.status === "running" ? "running" : t.status === "queued" ? "waiting to run" : cut ? cutShortLabel(t) : t.status));
        if (t.reason && !cut) facts.append(h("span", null, `reason: ${reasonWords(t.reason)}`));
        if (t.duration !== null) facts.append(h("span", null, `ran ${duration(t.duration)}${cut ? " until then" : ""}`));
        if (t.status === "success" || t.status === "error") facts.append(h("span", null, `${plural(t.chars, "character")}`));
      }
      facts.append(h("span", null, `id ${t.id}`));
      box.append(facts);
      if (t.callError) box.append(h("div", "tl-flag", dot("error"), `invalid call: ${t.callError}`));
      if (t.edited) box.append(h("div", "tl-flag", dot("warn"), "arguments edited by you before it ran"));
      if (t.answeredByHand) box.append(h("div", "tl-flag", dot("warn"), "answered by you: the tool never ran"));
      box.append(h("div", "tl-sub", "Arguments"), jsonView(t.args || {}, 1));
      if (t.status === "queued" || t.status === "running") return box;
      const p = t.pruned;
      if (p) {
        box.append(h("div", "tl-sub", "Result the model saw (pruned)"), resultView(p.pruned));
        const line = h("div", "tl-meta tl-num", `pruned ${tokens(p.before)} → ${tokens(p.after)} tokens: saved ${tokens(p.saved)}, net ${tokens(p.net)} after the pruning call's own ${tokens(p.usage.input + p.usage.output)} tokens`);
        box.append(line);
        if (p.net < 0) box.append(h("div", "tl-flag", dot("warn"), `pruning cost more than it saved: net loss of ${tokens(-p.net)} tokens`));
        const orig = h("div");
        const show = button(`Show the original (${plural(p.original.length, "character")})`, "tl-more", () => {
          if (orig.childNodes.length) {
            orig.textContent = "";
            show.textContent = `Show the original (${plural(p.original.length, "character")})`;
          } else {
            orig.append(resultView(p.original));
            show.textContent = "Hide the original";
          }
        });
        box.append(show, orig);
      } else if (t.status !== "not_run" || t.content) {
        const heading = t.status === "not_run" || t.status === "cancelled" ? "Answer sent to the model instead" : "Result";
        box.append(h("div", "tl-sub", heading), resultView(t.content));
      }
      return box;
    };
    const st = t.status === "not_run" ? "idle" : toolDot(t);
    const extra = h("span", `tl-chip tl-chip-${t.status}`, dot(st), t.status === "not_run" ? notRunLabel(t) : t.status === "queued" ? "waiting" : t.status === "cancelled" ? cutShortLabel(t) : t.status);
    if (t.status === "running") {
      const timer = h("span", "tl-meta tl-num");
      const fn = (node) => (node.textContent = duration(runNow(s) - t.tStart));
      fn(timer);
      liveDetail.push([timer, fn]);
      extra.append(" ", timer);
    }
    return block(s, `r${r.n}:t:${t.id}`, `Tool ${t.name}`, body, { copy: () => (t.pruned ? t.pruned.pruned : t.content), extra, open: r.tools.length <= 4 || t.status === "error" });
  }

  function resultView(text) {
    const parsed = parseJson(text);
    if (parsed !== undefined && typeof parsed === "object" && parsed !== null) return jsonView(parsed, 0);
    if (!text) return h("div", "tl-muted", "(empty)");
    return longText(text);
  }

  function gatesView(r) {
    const box = h("div", "tl-gates");
    for (const g of r.gates) {
      const name = word(GATE_NAME, g.gate);
      const when = g.stage === "before_call" ? "before the model call" : "after the model call";
      const fmt = g.gate === "token" ? tokens : usd;
      box.append(h("div", "tl-gate-line tl-num", dot(g.passed ? "answer" : "error"), `${name}, checked ${when}: ${fmt(g.spent)} of ${fmt(g.limit)}, ${g.passed ? "within the limit" : "limit reached"}`));
    }
    return box;
  }

  function interventionsView(r) {
    const box = h("div");
    const words = INTERVENTION;
    for (const iv of r.interventions) {
      box.append(h("div", "tl-sub", `You ${words[iv.action] || iv.action}${iv.id ? ` (${iv.id})` : ""}`));
      if (iv.action === "append_message" && iv.after && typeof iv.after === "object") {
        box.append(h("div", "tl-chat", chatMessage(iv.after)));
        continue;
      }
      if (iv.before !== null && iv.before !== undefined) box.append(h("div", "tl-meta", "Before"), jsonView(iv.before, 1));
      box.append(h("div", "tl-meta", "After"), jsonView(iv.after, 1));
    }
    return box;
  }

  // one bar per call and tool, on the round's own time axis; the time a pause held the
  // loop is a bar of its own, where it held it (before the call, the tools or pruning)
  function waterfall(r) {
    const box = h("div", "tl-wf");
    const spans = [];
    const now = () => runNow(s);
    const before = (p) => (p.stage === "tool_dispatch" ? "tools" : p.purpose === "pruning" ? "pruning" : "call");
    const waiting = s.control.paused_at;
    const holdsHere = !!waiting && !isDone(s) && waiting.round === r.n && typeof s.control.paused_since === "number";
    const pausesBefore = (where) => {
      for (const p of r.pauses) if (before(p) === where) spans.push({ label: "paused", kind: "paused", t0: () => p.t0, t1: () => p.t1 });
      if (holdsHere && before(waiting) === where) spans.push({ label: "paused", kind: "paused", t0: () => s.control.paused_since, t1: now, open: () => true });
    };
    pausesBefore("call");
    if (r.call) {
      const c = r.call;
      const label = r.purpose === "synthesis" ? "final-answer call" : "model call";
      if (held(s, c)) spans.push({ label, kind: "notrun", t0: () => null, t1: () => null, note: "not sent yet" });
      else spans.push({ label, kind: "model", t0: () => c.t0, t1: () => (c.t1 !== null ? c.t1 : c.interrupted ? s.lastT : now()), open: () => !c.done && !c.interrupted });
    }
    pausesBefore("tools");
    for (const t of r.tools) {
      if (!t.ran || t.status === "not_run") {
        spans.push({ label: t.name, kind: "notrun", t0: () => null, t1: () => null, note: notRunLabel(t) });
        continue;
      }
      const kind = t.status === "error" ? "error" : t.status === "cancelled" ? "stopped" : "tool";
      spans.push({ label: t.name, kind, t0: () => t.tStart, t1: () => (t.tEnd !== null ? t.tEnd : t.tStart !== null ? now() : null), open: () => t.status === "running", note: t.status === "queued" ? "waiting to run" : null, suffix: t.status === "cancelled" ? " stopped" : "" });
    }
    pausesBefore("pruning");
    for (const p of r.prunings) spans.push({ label: `pruning ${lastToolName(r, p.toolCallId)}`, kind: "prune", t0: () => p.t0, t1: () => (p.t1 !== null && p.t1 !== undefined ? p.t1 : p.interrupted ? s.lastT : now()), open: () => !p.done && !p.interrupted });
    if (!spans.length) return box;
    const lines = [];
    for (const sp of spans) {
      const bar = h("span", `tl-wf-bar tl-wf-${sp.kind}`);
      bar.setAttribute("aria-hidden", "true");
      const track = sp.kind === "notrun" ? h("span", "tl-wf-none tl-muted", sp.note || "not run") : h("span", "tl-wf-track", bar);
      const label = h("span", "tl-wf-dur tl-num");
      lines.push([sp, bar, label]);
      box.append(h("div", "tl-wf-line", h("span", "tl-wf-name", sp.label), track, label));
    }
    const axis = h("div", "tl-wf-axis tl-meta tl-num");
    box.prepend(axis);
    const paint = () => {
      const start = r.t0 !== null ? r.t0 : 0;
      let end = start;
      for (const [sp] of lines) {
        const b = sp.t1();
        if (b !== null && b !== undefined) end = Math.max(end, b);
      }
      end = Math.max(end, roundEnd(s, r));
      const span = Math.max(end - start, 1e-6);
      const paused = r.paused + (holdsHere ? Math.max(0, now() - s.control.paused_since) : 0);
      const extra = r.pauses.length || holdsHere ? `, plus ${duration(paused)} paused` : "";
      axis.textContent = `Round took ${duration(end - start - paused)}${extra}; bars on one time axis`;
      for (const [sp, bar, label] of lines) {
        const a = sp.t0();
        const b = sp.t1();
        if (a === null || a === undefined || b === null || b === undefined) {
          bar.style.left = "0";
          bar.style.width = "0";
          label.textContent = "—";
          continue;
        }
        bar.style.left = `${(((a - start) / span) * 100).toFixed(2)}%`;
        bar.style.width = `${Math.max(0.5, ((b - a) / span) * 100).toFixed(2)}%`;
        bar.classList.toggle("tl-wf-open", !!(sp.open && sp.open()));
        label.textContent = duration(b - a) + (sp.open && sp.open() ? " so far" : sp.suffix || "");
      }
    };
    paint();
    liveDetail.push([box, paint]);
    return box;
  }

  const listener = () => redraw(false);
  s.listeners.add(listener);
  redraw(true);
  return () => {
    s.listeners.delete(listener);
    if (tick) clearInterval(tick);
    if (raf) cancelAnimationFrame(raf);
    clearTimeout(searchTimer);
    clearTimeout(later);
    root.remove();
  };
}

// -- anywidget lifecycle ------------------------------------------------------------------
// anywidget calls the default export once per widget model: its closure holds the store
// that the model's messages feed and every view of that model draws from. (The model
// objects handed to initialize and render are per-call proxies, so they cannot key it.)
function liveStore(model) {
  const s = createStore();
  s.live = true;
  const saved = model.get("saved_events") || [];
  if (saved.length) {
    s.source = "saved";
    const omitted = model.get("saved_omitted") || 0;
    if (omitted) s.control = { ...s.control, note: `This notebook file keeps the newest rounds only: ${plural(omitted, "earlier round")} are not shown (replay the trace to see them).` };
    enqueue(s, saved);
  }
  return s;
}

function widgetFactory() {
  let s = null;
  return {
    initialize({ model }) {
      s = s || liveStore(model);
      const store = s;
      const onMsg = (msg) => {
        if (msg && msg.type === "events" && !receive(store, msg)) model.send({ type: "hello" });
      };
      const onChange = () => {
        store.version++;
        notify(store);
      };
      model.on("msg:custom", onMsg);
      model.on("change:_pause_on", onChange);
      model.on("change:live", onChange);
      model.send({ type: "hello" });
      return () => {
        model.off("msg:custom", onMsg);
        model.off("change:_pause_on", onChange);
        model.off("change:live", onChange);
      };
    },
    render({ model, el }) {
      s = s || liveStore(model);
      const host = {
        get live() {
          return !!model.get("live");
        },
        pauseOn: () => model.get("_pause_on") || "off",
        setPauseOn(v) {
          model.set("_pause_on", v);
          model.save_changes();
        },
        control(action) {
          // the pause it was clicked at: a double click never releases the next one
          const at = s.control.paused_at;
          model.send({ type: "control", action, pause: at ? at.pause : null });
        },
        send(msg) {
          model.send(msg);
        },
        forking: true,
        canFork: () => !!model.get("can_fork"),
      };
      const sync = () => {
        s.offset = model.get("round_offset") || 0;
        const info = model.get("fork_info");
        s.forkInfo = info && Object.keys(info).length ? info : null;
      };
      sync();
      const onChange = () => {
        sync();
        s.version++;
        notify(s);
      };
      for (const name of ["round_offset", "fork_info", "can_fork"]) model.on(`change:${name}`, onChange);
      const dispose = createView(el, s, host);
      return () => {
        for (const name of ["round_offset", "fork_info", "can_fork"]) model.off(`change:${name}`, onChange);
        dispose();
      };
    },
  };
}

// A static page (the HTML report, a snapshot): the same view from embedded events.
export function mount(el, events, options = {}) {
  const s = createStore();
  s.source = "static";
  if (options.note) s.control = { ...s.control, note: options.note };
  s.offset = options.round_offset || 0;
  const host = { live: false, pauseOn: () => "off", setPauseOn() {}, control() {}, send() {}, forking: false, canFork: () => false };
  const dispose = createView(el, s, host);
  enqueue(s, events || []);
  return { store: s, dispose };
}

export default widgetFactory;
