// @ts-check
// toolloop_lab's LoopDebugger front end, the entry esbuild bundles (with every module it
// imports and the words file) into the one shipped module, static/debugger.js:
// `npm ci && npm run build`.
//
// Python sends only new events (batched, at most ten messages a second); store.js folds
// them into a store shared by every view of the widget, and each view (view.js) draws
// from the store. Timers (the run's elapsed time, a model call or a tool in progress) tick
// here, with no kernel traffic. Every string from a model, a tool, a file or an exception
// reaches the page through textContent / createTextNode only: no HTML is ever parsed.
//
// Entry points: the anywidget lifecycle (default export: initialize + render) and
// mount(el, events, options) for a static page (the HTML report, the snapshot).

import { numbered } from "./control_state.js";
import { plural } from "./format.js";
import { foldRuns } from "./run_rows.js";
import { enqueue, createStore, notify, receive } from "./store.js";
import { createView } from "./view.js";

export { fold } from "./fold.js";
export { createRun, isDone, outcomeText } from "./run.js";
export { matches, roundState, roundTime } from "./rounds.js";
export { createStore, enqueue, receive } from "./store.js";
export { outcomeWords, reasonWords, usd } from "./words.js";

/** @typedef {import("./store.js").Store} Store */
/** @typedef {import("./context.js").Host} Host */

/**
 * The part of an anywidget model this module uses.
 * @typedef {object} Model
 * @property {(name: string) => any} get
 * @property {(name: string, value: any) => void} set
 * @property {() => void} save_changes
 * @property {(msg: any) => void} send
 * @property {(event: string, fn: (...args: any[]) => void) => void} on
 * @property {(event: string, fn: (...args: any[]) => void) => void} off
 */

const SYNCED = ["round_offset", "fork_info", "can_fork", "comparison"];

/** What a run saved in the notebook file says until a kernel answers (controls need one). */
export const SAVED_NOTE = "Saved in this notebook: no kernel is connected, so this run cannot be paused, changed or forked.";

/**
 * A widget's store, from the events its notebook file kept (shown without a kernel).
 * @param {Model} model
 * @returns {Store}
 */
function liveStore(model) {
  const s = createStore();
  s.live = true;
  const rows = model.get("saved_runs") || [];
  if (rows.length) foldRuns(s, { reset: true, rows, left_out: model.get("saved_runs_left_out") || 0, pinned: null });
  const saved = model.get("saved_events") || [];
  if (saved.length) {
    s.source = "saved";
    const omitted = model.get("saved_omitted") || 0;
    s.omitted = omitted;
    s.omittedMessages = model.get("saved_omitted_messages") || 0;
    const kept = omitted ? ` The file keeps the newest rounds only: ${plural(omitted, "earlier round")} are not shown (replay the trace to see them).` : "";
    s.control = { ...s.control, note: `${SAVED_NOTE}${kept}` };
    enqueue(s, saved);
  }
  return s;
}

/**
 * What the view asks of a kernel-backed widget.
 * @param {Model} model
 * @param {Store} s
 * @returns {Host}
 */
function modelHost(model, s) {
  return {
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
    showRun(runId) {
      s.runsNote = null;
      /** @param {any} answer */
      const answered = (answer) => {
        s.runsNote = answer && !answer.ok ? answer.message || answer.reason || "refused" : null;
        changed(s);
      };
      model.send(numbered(s.requests, { type: "show_run", run_id: runId }, answered));
    },
    compare(a, b) {
      s.ui.cmpMsg = { state: "idle", text: "Comparing the two runs…" };
      changed(s);
      const ask = numbered(s.requests, { type: "compare", a, b }, (answer) => {
        s.ui.cmpMsg = answer.ok ? null : { state: "error", text: `Cannot compare them (${answer.reason}): ${answer.message}` };
        changed(s);
      });
      model.send(ask);
    },
    closeComparison() {
      s.ui.cmpMsg = null;
      const ask = numbered(s.requests, { type: "compare", action: "close" }, (answer) => {
        if (answer.ok) return;
        s.ui.cmpMsg = { state: "error", text: `Cannot close the comparison (${answer.reason}): ${answer.message}` };
        changed(s);
      });
      model.send(ask);
    },
  };
}

/**
 * Tell every view of `s` that something outside the run changed.
 * @param {Store} s
 */
function changed(s) {
  s.version++;
  notify(s);
}

// anywidget calls the default export once per widget model: its closure holds the store
// that the model's messages feed and every view of that model draws from. (The model
// objects handed to initialize and render are per-call proxies, so they cannot key it.)
function widgetFactory() {
  /** @type {Store | null} */
  let store = null;
  return {
    /** @param {{model: Model}} args */
    initialize({ model }) {
      const s = (store = store || liveStore(model));
      /** @param {any} msg */
      const onMsg = (msg) => {
        if (msg && msg.type === "events" && !receive(s, msg)) model.send({ type: "hello" });
      };
      const onChange = () => {
        s.version++;
        notify(s);
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
    /** @param {{model: Model, el: HTMLElement}} args */
    render({ model, el }) {
      const s = (store = store || liveStore(model));
      const sync = () => {
        s.offset = model.get("round_offset") || 0;
        const info = model.get("fork_info");
        s.forkInfo = info && Object.keys(info).length ? info : null;
        const c = model.get("comparison");
        s.comparison = c && Object.keys(c).length ? c : null;
      };
      sync();
      const onChange = () => {
        sync();
        changed(s);
      };
      for (const name of SYNCED) model.on(`change:${name}`, onChange);
      const dispose = createView(el, s, modelHost(model, s));
      return () => {
        for (const name of SYNCED) model.off(`change:${name}`, onChange);
        dispose();
      };
    },
  };
}

/** @type {Host} */
const STATIC_HOST = { live: false, pauseOn: () => "off", setPauseOn() {}, control() {}, send() {}, forking: false, canFork: () => false };

/**
 * A static page (the HTML report, a snapshot): the same view from embedded events.
 * @param {HTMLElement} el
 * @param {any[]} events the run's events as Python's event_payload writes them
 * @param {{note?: string, round_offset?: number}} [options]
 * @returns {{store: Store, dispose: () => void}}
 */
export function mount(el, events, options = {}) {
  const s = createStore();
  s.source = "static";
  if (options.note) s.control = { ...s.control, note: options.note };
  s.offset = options.round_offset || 0;
  const dispose = createView(el, s, STATIC_HOST);
  enqueue(s, events || []);
  return { store: s, dispose };
}

/**
 * A page of several runs (an exported file): the run list of `rows`, and the run a person
 * picks shown from its own events, read (and parsed) only when it is shown. No kernel: the
 * view cannot step, fork or compare, and says so.
 * @param {HTMLElement} el
 * @param {any[]} rows the run list's rows, as Python's row_payload writes them
 * @param {(runId: string) => any[] | null} eventsOf a run's events (null: the file lacks them)
 * @param {{note?: string, shown?: string | null, left_out?: number, let_go?: string | null}} [options]
 * @returns {{store: Store, dispose: () => void}}
 */
export function mountRuns(el, rows, eventsOf, options = {}) {
  const s = createStore();
  s.source = "static";
  const note = options.note || "";
  s.control = { ...s.control, note };
  foldRuns(s, { reset: true, rows, left_out: options.left_out || 0, pinned: null, let_go: options.let_go || null });
  let epoch = 0;
  /**
   * Show run `runId` (null: the newest top-level run).
   * @param {string | null} runId
   */
  const show = (runId) => {
    const target = runId !== null ? runId : newestTop(s);
    const events = target !== null ? eventsOf(target) : null;
    if (target !== null && events === null) {
      s.runsNote = "This file does not hold that run's events.";
      changed(s);
      return;
    }
    s.runsNote = null;
    s.runsPinned = runId;
    receive(s, { type: "events", epoch: ++epoch, first: 0, reset: true, events: events || [], now: null, control: s.control });
    s.source = "static";
  };
  /** @type {Host} */
  const host = { ...STATIC_HOST, showRun: show };
  const dispose = createView(el, s, host);
  const first = options.shown === undefined ? null : options.shown;
  show(first === newestTop(s) ? null : first); // the newest is followed, not pinned
  return { store: s, dispose };
}

/**
 * The newest run no held run started (what a view follows), as Python's RunBook says it.
 * @param {Store} s
 * @returns {string | null}
 */
function newestTop(s) {
  const ids = [...s.runs.keys()];
  for (let i = ids.length - 1; i >= 0; i--) {
    const row = /** @type {import("./run_rows.js").RunRow} */ (s.runs.get(ids[i]));
    if (row.parent_run_id === null || !s.runs.has(row.parent_run_id)) return ids[i];
  }
  return null;
}

export default widgetFactory;
