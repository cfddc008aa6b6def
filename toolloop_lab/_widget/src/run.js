// @ts-check
// The shape of a run as the fold (fold.js) keeps it: its rounds, model calls, tool calls
// and totals, and the constructors the fold grows them with. No DOM, no link, no control.

import { num } from "./format.js";
import { NONE, add } from "./lean.js";
import { outcomeWords } from "./words.js";

/** @typedef {Record<string, any>} WireEvent one event as Python sends it (event_payload) */

/**
 * @typedef {object} Usage
 * @property {number} input
 * @property {number} output
 * @property {number} cacheRead
 * @property {number | null} cost
 * @property {number | null} costIn
 * @property {number | null} costOut
 * @property {boolean} estimated
 * @property {number} requests model calls counted here (Usage.requests)
 */

/**
 * @typedef {object} Tool one tool call of a round
 * @property {string} id
 * @property {string} name
 * @property {any} args
 * @property {boolean} valid
 * @property {string | null} callError
 * @property {number | null} tStart
 * @property {number | null} tEnd
 * @property {string} status queued, running, success, error, cancelled or not_run
 * @property {string | null} reason
 * @property {string | null} errorType the class name of the exception its tool raised
 * @property {boolean} ran
 * @property {number | null} duration
 * @property {number} chars
 * @property {string} content
 * @property {Pruning | null} pruned the pruning record when its output was pruned
 * @property {boolean} pruning
 * @property {boolean} edited arguments changed by a person at the pause
 * @property {boolean} answeredByHand a person wrote its result instead of running it
 * @property {string | null} server the MCP server its tool came from
 * @property {LogLine[]} log what that server logged while it ran (numbered as in its log)
 * @property {number} logDropped lines of that span left out by the bound
 * @property {any[] | null} blocks its result's blocks when they hold more than text (an image)
 * @property {any} structured its MCP result's structured content (a JSON object), or null
 */

/**
 * @typedef {object} LogLine one line of an MCP server's log
 * @property {number} n its number in the server's log (from 1)
 * @property {string} text
 */

/**
 * @typedef {object} Server one MCP server of a run, as RunView's ServerView
 * @property {string} name
 * @property {string | null} transport
 * @property {string | null} session
 * @property {number} calls calls of its tools answered
 * @property {number} failed ... that ended in an error
 * @property {Map<number, string>} lines its log's lines by number (the newest SERVER_LOG_LINES)
 * @property {number} lastLine the number of the newest line seen
 */

/**
 * @typedef {object} Call one model call (a round's, the final answer's, or a pruning)
 * @property {number} call
 * @property {number} round
 * @property {string} purpose
 * @property {string | null} model
 * @property {string[]} tools
 * @property {number | null} t0
 * @property {number | null} t1
 * @property {boolean} streaming
 * @property {string} text
 * @property {{id: string | null, name: string, args: string}[]} fragments
 * @property {number | null} msgFrom
 * @property {number | null} msgTo
 * @property {any[] | null} messages
 * @property {Usage | null} usage
 * @property {number | null} latency
 * @property {number | null} firstToken
 * @property {any[]} toolCalls
 * @property {string | null} finish
 * @property {boolean} stuck
 * @property {boolean} empty
 * @property {boolean} truncated
 * @property {boolean} done
 * @property {string} [interrupted] "cancelled", "failed" or how the run ended
 * @property {{type: string, message: string, traceback: string | null}} [error] why it raised (traceback: where, clipped; null in older traces)
 * @property {string} [toolCallId] a pruning call's tool call
 */

/**
 * @typedef {object} Pruning what pruning one tool output did
 * @property {string} model
 * @property {number} before tokens of the original
 * @property {number} after tokens of the pruned text
 * @property {number} saved before - after
 * @property {number} net saved less the pruning call's own tokens
 * @property {Usage} usage
 * @property {number} latency
 * @property {string} original
 * @property {string} pruned
 * @property {number} t1
 * @property {number} call
 */

/**
 * @typedef {object} Round
 * @property {number} n
 * @property {number} index
 * @property {string} purpose "round" or "synthesis"
 * @property {number | null} t0 run time of its first event
 * @property {number | null} tLast ... and of its last
 * @property {{stage: string, purpose: string, t0: number, t1: number}[]} pauses
 * @property {number} paused seconds pauses held it: never part of its duration
 * @property {Call | null} call
 * @property {any[]} prunings
 * @property {Tool[]} tools in call order (find one by id with {@link findTool})
 * @property {{gate: string, stage: string, limit: number, spent: number, passed: boolean}[]} gates
 * @property {{reason: string, prompt: string} | null} synthesis
 * @property {{action: string, stage: string, id: string, before: any, after: any}[]} interventions
 * @property {{type: string, message: string, traceback: string | null, latency: number, t: number}[]} failedCalls
 * @property {Usage} pruneUsage
 * @property {Call[]} summaries summarization calls after its tools (LangChain's SummarizationMiddleware)
 * @property {Usage} summaryUsage
 * @property {number} v changes of this round (a view's redraw key)
 * @property {string | null} hay
 * @property {number} hayV
 */

/**
 * @typedef {object} RunInfo what loop_start says of the run
 * @property {string} model
 * @property {string[]} tools
 * @property {number | null} maxRounds
 * @property {number | null} tokenBudget
 * @property {number | null} contextWindow
 * @property {number | null} usdLimit
 * @property {string[]} pruneTools
 * @property {string} startedAt
 * @property {string} source
 * @property {string | null} name
 * @property {any} inputMessages
 */

/**
 * @typedef {object} Run the fold of one run's events
 * @property {number} version grows with every change (views redraw on it)
 * @property {string | null} runId
 * @property {RunInfo | null} run
 * @property {string} status idle, running, finished, failed or cancelled
 * @property {string | null} outcome
 * @property {WireEvent | null} finish
 * @property {WireEvent | null} failure
 * @property {number} lastT
 * @property {number} paused seconds pauses held the loop: a person's time, not the run's
 * @property {number} pauses how many there were
 * @property {Usage} totals
 * @property {number} lastContext
 * @property {Round[]} rounds
 * @property {Map<number, Round>} byNumber
 * @property {Map<number, Call>} calls
 * @property {any[]} conversation
 * @property {string} tokenGate off, passed or tripped
 * @property {string} usdGate
 * @property {Set<string>} toolNames
 * @property {number} maxRoundCost
 * @property {Map<string, Server>} servers the MCP servers its tools came from, as first named
 */

/** Lines of each server's log the fold keeps (the newest): RunView's SERVER_LOG_LINES. */
export const SERVER_LOG_LINES = 500;

/** @returns {Usage} */
export function newUsage() {
  return { input: 0, output: 0, cacheRead: 0, cost: 0, costIn: null, costOut: null, estimated: false, requests: 0 };
}

/** No usage: what a round's pruning starts at (shared, frozen; {@link addUsage} makes a new one). */
export const NO_USAGE = /** @type {Usage} */ (Object.freeze(newUsage()));

/**
 * A usage dict of an event as the fold keeps it.
 * @param {any} u
 * @returns {Usage}
 */
export function readUsage(u) {
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
  out.requests = u.requests || 0;
  return out;
}

/**
 * @param {Usage} a
 * @param {Usage} b
 * @returns {Usage}
 */
export function addUsage(a, b) {
  /** @type {(x: number | null, y: number | null) => number | null} */
  const sum = (x, y) => (x === null || y === null ? null : x + y);
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cost: sum(a.cost, b.cost),
    costIn: a.costIn === null && b.costIn === null ? null : sum(a.costIn || 0, b.costIn || 0),
    costOut: a.costOut === null && b.costOut === null ? null : sum(a.costOut || 0, b.costOut || 0),
    estimated: a.estimated || b.estimated,
    requests: a.requests + b.requests,
  };
}

/** @returns {Run} */
export function createRun() {
  const run = /** @type {Run} */ ({ version: 0 });
  resetRun(run);
  return run;
}

/**
 * Forget the run (a new one starts): in place, so `version` keeps growing.
 * @param {Run} s
 */
export function resetRun(s) {
  s.runId = null;
  s.run = null;
  s.status = "idle";
  s.outcome = null;
  s.finish = null;
  s.failure = null;
  s.lastT = 0;
  s.paused = 0;
  s.pauses = 0; // (a round a pause held always says so)
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
  s.servers = new Map();
  s.version++;
}

/**
 * MCP server `name` of the run, made when it is first named.
 * @param {Run} s
 * @param {string} name
 * @returns {Server}
 */
export function serverOf(s, name) {
  let v = s.servers.get(name);
  if (!v) {
    v = { name, transport: null, session: null, calls: 0, failed: 0, lines: new Map(), lastLine: 0 };
    s.servers.set(name, v);
  }
  return v;
}

/**
 * Lines `first`, `first + 1`, ... of a server's log, each kept once (RunView's ServerView.take).
 * @param {Server} v
 * @param {number} first
 * @param {string[]} lines
 */
export function takeLines(v, first, lines) {
  let sorted = true;
  let prev = -Infinity;
  lines.forEach((text, i) => {
    if (!v.lines.has(first + i)) v.lines.set(first + i, text);
  });
  for (const n of v.lines.keys()) {
    if (n < prev) sorted = false;
    prev = n;
  }
  if (!sorted) v.lines = new Map([...v.lines.entries()].sort((a, b) => a[0] - b[0]));
  if (lines.length) v.lastLine = Math.max(v.lastLine, first + lines.length - 1);
  if (v.lines.size > SERVER_LOG_LINES) v.lines = new Map([...v.lines.entries()].slice(-SERVER_LOG_LINES));
}

/**
 * Round `n`, made when it is first named.
 * @param {Run} s
 * @param {number} n
 * @returns {Round}
 */
export function roundOf(s, n) {
  let r = s.byNumber.get(n);
  if (!r) {
    r = {
      n,
      index: s.rounds.length,
      purpose: "round",
      t0: null,
      tLast: null,
      pauses: NONE,
      paused: 0,
      call: null,
      prunings: NONE,
      tools: NONE,
      gates: NONE,
      synthesis: null,
      interventions: NONE,
      failedCalls: NONE, // model calls of this round that raised (retried, or the run failed)
      pruneUsage: NO_USAGE,
      summaries: NONE,
      summaryUsage: NO_USAGE,
      v: 0,
      hay: null,
      hayV: -1,
    };
    s.rounds.push(r);
    s.byNumber.set(n, r);
  }
  return r;
}

/**
 * Tool call `id` of round `r`, made when it is first named.
 * @param {Round} r
 * @param {string} id
 * @param {string} [name]
 * @param {any} [args]
 * @returns {Tool}
 */
export function toolOf(r, id, name, args) {
  let t = findTool(r, id);
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
      errorType: null,
      ran: true,
      duration: null,
      chars: 0,
      content: "",
      pruned: null,
      pruning: false,
      edited: false,
      answeredByHand: false,
      server: null,
      log: NONE,
      logDropped: 0,
      blocks: null,
      structured: null,
    };
    r.tools = add(r.tools, t);
  }
  return t;
}

/**
 * Tool call `id` of round `r`, if it has one. A round holds a few calls, so a scan costs
 * less than a map kept for every round of a long run.
 * @param {Round} r
 * @param {string} id
 * @returns {Tool | undefined}
 */
export function findTool(r, id) {
  for (const t of r.tools) if (t.id === id) return t;
  return undefined;
}

/**
 * The model call event `e` is about, made when it is first named.
 * @param {Run} s
 * @param {WireEvent} e
 * @param {Round} r
 * @returns {Call}
 */
export function callOf(s, e, r) {
  let c = e.call ? s.calls.get(e.call) : null;
  if (!c) {
    c = {
      call: e.call || 0,
      round: r.n,
      purpose: e.purpose || "round",
      model: e.model_name || null,
      tools: NONE,
      t0: null,
      t1: null,
      streaming: false,
      text: "",
      fragments: NONE,
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

/**
 * Whether the run has ended (finished, failed or cancelled).
 * @param {Run} s
 * @returns {boolean}
 */
export function isDone(s) {
  return s.status === "finished" || s.status === "failed" || s.status === "cancelled";
}

/**
 * How the run ended, in the words every view uses (_widget/figures.py's outcome).
 * @param {Run} s
 * @returns {string | null}
 */
export function outcomeText(s) {
  if (!s.outcome) return null;
  const end = s.finish || {};
  return outcomeWords(s.outcome, end.synthesis_reason);
}
