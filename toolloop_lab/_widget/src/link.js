// @ts-check
// The link protocol between Python and this page. Python sends a run's events once, in
// numbered batches: {type: "events", epoch, first, reset, events, ...}. `epoch` grows with
// every run or replay Python starts; `first` is the index of the batch's first event in
// that epoch. A page that missed events (it joined mid-stream, or a batch was lost) says
// "hello" and Python replays everything from index 0 under a new epoch.

/** @typedef {{epoch: number | null, received: number}} Link what this page took of the stream */

/**
 * What to do with one message:
 * - "take": the next batch of this epoch, fold it;
 * - "restart": the first batch of a new epoch (or a replay): forget the run, then fold it;
 * - "duplicate": a batch already taken, ignore it;
 * - "stale": a message of an older epoch, ignore it;
 * - "gap": events were missed, ask for a replay (hello) and fold nothing;
 * - "ignore": not a batch of events.
 * @typedef {"take" | "restart" | "duplicate" | "stale" | "gap" | "ignore"} Verdict
 */

/** @returns {Link} */
export function createLink() {
  return { epoch: null, received: 0 };
}

/**
 * Judge `msg` and, when it is taken, count its events as received.
 * @param {Link} link
 * @param {any} msg
 * @returns {Verdict}
 */
export function accept(link, msg) {
  if (!msg || msg.type !== "events" || !Array.isArray(msg.events)) return "ignore";
  if (typeof msg.epoch === "number" && typeof link.epoch === "number" && msg.epoch < link.epoch) return "stale";
  let restart = false;
  if (msg.epoch !== link.epoch || msg.reset) {
    if (msg.first !== 0) return "gap"; // joined mid-stream: ask for everything
    link.epoch = msg.epoch;
    link.received = 0;
    restart = true;
  }
  if (msg.first !== link.received) return msg.first < link.received ? "duplicate" : "gap";
  link.received += msg.events.length;
  return restart ? "restart" : "take";
}
