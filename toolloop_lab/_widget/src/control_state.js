// @ts-check
// Python's control state, as the last batch carried it: where the loop waits (paused_at),
// since when, whether a task runs, a note, and the answers to this page's requests.
// Requests (an edit at a pause, a fork) go to Python numbered; Python checks them and
// answers with the next message: control.answers holds every answer given since the last
// message (control.answer, the newest). Each carries its request's number, refusals and
// failures included, and its words are shown where the request was made.

/**
 * @typedef {object} Control
 * @property {any} paused_at the pause point the loop waits at, or null
 * @property {number | null} [paused_since] run time it began to wait there
 * @property {boolean} running
 * @property {string | null} note
 * @property {boolean} stopped_by_user
 * @property {Reach} [reach] what Continue, Step, Stop and the pause selector can do for the run shown
 * @property {boolean} [continued] Continue let this run go on: it will not pause again
 * @property {Answer | null} [answer] the newest answer
 * @property {Answer[]} [answers] every answer given since the message before
 */

/**
 * @typedef {object} Answer Python's answer to a numbered request
 * @property {number | null} request the request's number (null: it gave none that could be read)
 * @property {boolean} ok
 * @property {string | null} [reason] why it was refused (a code)
 * @property {string} [message] words for the person
 */

/**
 * @typedef {object} Reach whether Stop, and pausing (Step, Continue, the selector), can act
 * on the run shown; when one cannot, why (words from words.json, sent by Python)
 * @property {boolean} stop
 * @property {boolean} pause
 * @property {string | null} why the reason, a sentence (tooltips)
 * @property {string | null} [code] its code in the words file's reach table
 * @property {string | null} [hint] the reason, short (the hint beside the controls)
 */

/**
 * @typedef {object} Requests this page's requests waiting for Python's answer
 * @property {Map<number, (answer: any) => void>} pending request number -> what to do with its answer
 * @property {number} next the next request's number
 */

/** @returns {Control} */
export function createControl() {
  return { paused_at: null, running: false, note: null, stopped_by_user: false, reach: { stop: true, pause: true, why: null } };
}

/** @returns {Requests} */
export function createRequests() {
  return { pending: new Map(), next: 1 + Math.floor(Math.random() * 1e9) }; // never an earlier page's number
}

/**
 * Number `msg` as a new request whose answer goes to `onAnswer`; returns what to send.
 * @param {Requests} req
 * @param {Record<string, any>} msg
 * @param {(answer: any) => void} onAnswer
 * @returns {Record<string, any>}
 */
export function numbered(req, msg, onAnswer) {
  const id = req.next++;
  req.pending.set(id, onAnswer);
  // a kernel that is gone (a saved notebook) or stuck never answers: say so, never wait forever
  const timer = setTimeout(() => {
    if (!req.pending.has(id)) return;
    req.pending.delete(id);
    onAnswer({ request: id, ok: false, reason: "no_answer", message: NO_ANSWER });
  }, ANSWER_WAIT_MS);
  const t = /** @type {any} */ (timer);
  if (t && typeof t.unref === "function") t.unref(); // never keeps Node's tests alive
  return { ...msg, request: id };
}

/** How long a request waits for Python's answer before it says none came. */
export const ANSWER_WAIT_MS = 20_000;
export const NO_ANSWER = "No answer from the kernel in 20 s: it is not running (a saved notebook), or busy.";

/**
 * Hand every answer a control state carries to the request waiting for it (each once).
 * @param {Requests} req
 * @param {Control} control
 */
export function settle(req, control) {
  const all = Array.isArray(control.answers) ? [...control.answers, control.answer] : [control.answer];
  for (const answer of all) {
    if (!answer || typeof answer.request !== "number" || !req.pending.has(answer.request)) continue;
    const done = /** @type {(answer: any) => void} */ (req.pending.get(answer.request));
    req.pending.delete(answer.request);
    done(answer);
  }
}

/**
 * Whether a pause ended a wait before a model call (that call is sent now).
 * @param {Control} was
 * @param {Control} now
 * @returns {boolean}
 */
export function releasedModelCall(was, now) {
  const p = was.paused_at;
  return !!p && p.stage === "model_call" && !now.paused_at;
}
