// @ts-check
// The store every view of one widget draws from: the run's fold (run.js, fold.js), the
// link it is fed through (link.js), Python's control state (control_state.js), the traits
// Python syncs, and what the person chose on the page (ui). Events are folded in slices,
// so a long replay never blocks the page; listeners hear of every change.

import { createControl, createRequests, releasedModelCall, settle } from "./control_state.js";
import { fold } from "./fold.js";
import { accept, createLink } from "./link.js";
import { createRun, isDone, resetRun } from "./run.js";
import { foldRuns } from "./run_rows.js";

/** @typedef {import("./run.js").Run} Run */
/** @typedef {import("./run.js").Call} Call */
/** @typedef {import("./control_state.js").Control} Control */
/** @typedef {import("./run_rows.js").RunRow} RunRow */

const SLICE_MS = 8; // longest fold slice before yielding to the page

/**
 * @typedef {object} Ui what the person chose on the page (survives redraws)
 * @property {number | null} selected the round shown in the detail pane (null: the newest)
 * @property {string} filter "all" or "errors"
 * @property {string} tool
 * @property {string} search
 * @property {Map<string, boolean>} collapsed block key -> collapsed
 * @property {boolean} follow
 * @property {any} edit the editor open at a pause
 * @property {{n: number, state: string, text: string} | null} forkMsg
 * @property {{state: string, text: string} | null} cmpMsg what Python answered to the last comparison asked for
 * @property {any} cmpHidden the comparison the person closed (hidden until Python clears it)
 * @property {import("./run_query.js").RunQuery | null} runs what the run list shows: filter and sort
 */

/**
 * @typedef {object} Store
 * @property {number} version grows with every change outside the run (see stamp)
 * @property {Run} run the fold of the run's events
 * @property {import("./link.js").Link} link
 * @property {Control} control
 * @property {import("./control_state.js").Requests} requests
 * @property {number | null} clockBase performance.now()/1000 minus the run's clock, from the last batch
 * @property {any[]} queue events waiting to be folded
 * @property {number} qi
 * @property {boolean} draining
 * @property {Set<() => void>} listeners
 * @property {boolean} live
 * @property {string} source none, live, saved or static
 * @property {number} omitted rounds of a saved run its notebook file left out (its counts add them)
 * @property {number} omittedMessages the conversation messages those rounds brought in
 * @property {number} offset added to every round number shown (a fork's rounds read as the original's)
 * @property {any} forkInfo a fork's debugger: where it was forked
 * @property {any} comparison two runs side by side (Python's comparing.py), or null
 * @property {Map<string, RunRow>} runs every run the debugger keeps, in start order (run_rows.js)
 * @property {number} runsLeftOut runs it no longer keeps
 * @property {string | null} runsPinned the run a person picked to show (null: the newest)
 * @property {number} runsVersion grows with every change of the rows
 * @property {string | null} runsNote why the last pick was refused
 * @property {string | null} runsLetGo what the debugger let go of its runs, in words (null: nothing)
 * @property {Ui} ui
 */

/** @returns {Store} */
export function createStore() {
  return {
    version: 0,
    run: createRun(),
    link: createLink(),
    control: createControl(),
    requests: createRequests(),
    clockBase: null,
    queue: [],
    qi: 0,
    draining: false,
    listeners: new Set(),
    live: false,
    source: "none",
    omitted: 0,
    omittedMessages: 0,
    offset: 0,
    forkInfo: null,
    runs: new Map(),
    runsLeftOut: 0,
    runsPinned: null,
    runsVersion: 0,
    runsNote: null,
    runsLetGo: null,
    comparison: null,
    ui: { selected: null, filter: "all", tool: "", search: "", collapsed: new Map(), follow: true, edit: null, forkMsg: null, cmpMsg: null, cmpHidden: null, runs: null },
  };
}

/**
 * A number that changes whenever anything a view draws changes.
 * @param {Store} s
 * @returns {number}
 */
export function stamp(s) {
  return s.version + s.run.version;
}

/** @param {Store} s */
export function notify(s) {
  for (const fn of s.listeners) fn();
}

/** @type {(() => void)[]} */
const waiting = [];
/** @type {MessagePort | null} */
let port = null;

/**
 * Run `fn` as the next task: in a browser, a message to ourselves, which the page runs as
 * soon as it has drawn what is due (a chain of setTimeout(0) waits 4 ms a link after the
 * fifth); elsewhere (Node, where no timer is clamped so) a timer, which keeps its place
 * among the other timers.
 * @param {() => void} fn
 */
export function soon(fn) {
  if (typeof MessageChannel !== "function" || typeof window === "undefined") {
    setTimeout(fn, 0);
    return;
  }
  if (!port) {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      const f = waiting.shift();
      if (f) f();
    };
    port = channel.port2;
  }
  waiting.push(fn);
  port.postMessage(null);
}

/** @param {Store} s */
function drain(s) {
  const t0 = performance.now();
  const q = s.queue;
  while (s.qi < q.length) {
    fold(s.run, q[s.qi++]);
    if ((s.qi & 15) === 0 && performance.now() - t0 > SLICE_MS) break;
  }
  if (s.qi >= q.length) {
    s.queue = [];
    s.qi = 0;
    s.draining = false;
  } else {
    soon(() => drain(s));
  }
  notify(s); // views redraw at their own pace
}

/**
 * Fold `events` in (in slices, from the next free moment on when a slice runs long).
 * @param {Store} s
 * @param {any[]} events
 */
export function enqueue(s, events) {
  for (const e of events) s.queue.push(e);
  if (!s.draining) {
    s.draining = true;
    drain(s);
  }
}

/**
 * One message from Python: {type: "events", epoch, first, reset, events, now, control,
 * runs?}. Returns false when a gap shows events were missed (the caller asks for a
 * replay). The run list's rows and the answers to this page's requests are taken whatever
 * the verdict: they follow the order of the messages, not the epochs of the run shown (an
 * answer dropped with a batch would leave its request waiting until it says none came).
 * @param {Store} s
 * @param {any} msg
 * @returns {boolean}
 */
export function receive(s, msg) {
  if (msg && msg.type === "events" && msg.runs) {
    foldRuns(s, msg.runs);
    s.version++;
  }
  const verdict = accept(s.link, msg);
  if (verdict !== "take" && verdict !== "restart" && msg && msg.type === "events" && msg.control) settle(s.requests, msg.control);
  if (verdict === "gap") return false;
  if (verdict !== "take" && verdict !== "restart") {
    if (msg && msg.runs) notify(s); // the rows changed all the same
    return true;
  }
  if (verdict === "restart") {
    s.queue = [];
    s.qi = 0;
    resetRun(s.run);
    s.source = "live";
    s.omitted = 0;
    s.omittedMessages = 0;
  }
  if (msg.control) {
    const was = s.control;
    s.control = msg.control;
    settle(s.requests, msg.control);
    if (releasedModelCall(was, msg.control) && typeof msg.now === "number") {
      // the call held at the pause is sent now: its clock starts here
      const last = s.run.rounds[s.run.rounds.length - 1];
      if (last && last.call && !last.call.done) last.call.t0 = msg.now;
    }
  }
  if (typeof msg.now === "number") s.clockBase = performance.now() / 1000 - msg.now;
  else s.clockBase = null;
  s.version++;
  enqueue(s, msg.events);
  return true;
}

/**
 * The run's clock now (seconds since it started), ticking between messages.
 * @param {Store} s
 * @returns {number}
 */
export function runNow(s) {
  if (isDone(s.run) || s.clockBase === null) return s.run.lastT;
  return Math.max(s.run.lastT, performance.now() / 1000 - s.clockBase);
}

/**
 * Seconds the loop has been held at the pause it waits at now (0 when it does not wait).
 * @param {Store} s
 * @returns {number}
 */
export function holdingNow(s) {
  const since = s.control.paused_since;
  if (!s.control.paused_at || isDone(s.run) || typeof since !== "number") return 0;
  return Math.max(0, runNow(s) - since);
}

/**
 * A call whose model_call_start came before a pause is not sent until the pause ends.
 * @param {Store} s
 * @param {Call} c
 * @returns {boolean}
 */
export function held(s, c) {
  const p = s.control.paused_at;
  return !!p && !isDone(s.run) && p.stage === "model_call" && !c.done && c.round === p.round;
}

/**
 * Whether the loop waits at a pause now (a live run that has not ended).
 * @param {Store} s
 * @returns {boolean}
 */
export function pausedNow(s) {
  return !!s.control.paused_at && !isDone(s.run);
}
