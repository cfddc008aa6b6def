// @ts-check
// The editor a person opens at a pause: edit a call's arguments (checked against the
// tool's schema by Python as they type), answer a call without running it, replace a
// result the model has not seen, or add a message. Python checks every change and
// answers; a refused change leaves the run unchanged and still paused. Ctrl+Enter (Cmd+Enter)
// applies an editor, Escape closes it and shows what was there; neither, nor Shift+Enter,
// reaches the notebook (keys.js keepFieldKeys).
//
// Step or Continue clicked while an editor holds a change apply it first, as its own button
// would: the change goes with the click, Python makes it and only then lets the loop go on,
// or holds the pause and says why, next to the edit. The run never goes on other than as
// the person set it up. An editor left as it opened holds no change: it closes, and the
// click goes as it is. Stop ends the run: nothing runs after it, so no change goes with it.

import { button, dot, dropdown, h } from "./dom.js";
import { visible } from "./format.js";

/** @typedef {import("./context.js").ViewContext} ViewContext */

/**
 * @typedef {object} Edit an open editor
 * @property {"args" | "skip" | "result" | "message"} kind
 * @property {number} pause the pause it was opened at
 * @property {string} [callId]
 * @property {string} [name]
 * @property {string} text
 * @property {{text: string, status?: string, role?: string}} [from] what it opened with (a change is what differs)
 * @property {string} [status] success or error (skip, result)
 * @property {string} [role] user or assistant (message)
 * @property {string} [msg] what the editor says now
 * @property {string} [msgKind] idle, ok or error
 * @property {string} [invalid] why the arguments do not fit the tool (the live check's words); "" when they do
 * @property {boolean} [checking] typed since the last verdict: the live check has not said yet
 * @property {boolean} [sending] applied: sent to Python, waiting for its answer
 * @property {boolean} [releasing] sent with Step or Continue, waiting for Python's answer
 * @property {"step" | "continue" | null} [then] Step or Continue clicked while it was being applied: sent once it is
 * @property {boolean} [focus]
 * @property {(state: string, text: string) => void} [show]
 */

/**
 * @param {string} text
 * @returns {{value?: Record<string, any>, error?: string}}
 */
export function parseArgs(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { error: `Not valid JSON: ${err instanceof Error && err.message ? err.message : "cannot be read"}` };
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { error: 'The arguments must be a JSON object, like {"path": "a.txt"}.' };
  return { value };
}

/** @type {Record<string, {title: (e: Edit) => string, label: string, apply: string}>} */
const EDITORS = {
  args: { title: (e) => `Edit the arguments of ${e.name} (${e.callId})`, label: "Arguments (JSON)", apply: "Run with these arguments" },
  skip: { title: (e) => `Answer ${e.name} (${e.callId}) yourself`, label: "The result the model reads", apply: "Skip the tool" },
  result: { title: (e) => `Replace the result of ${e.name} (${e.callId})`, label: "The result the model reads", apply: "Replace the result" },
  message: { title: () => "Add a message before this call", label: "Message", apply: "Add the message" },
};

/**
 * @typedef {object} Choice the one dropdown an editor kind has, kept in step with a field
 * @property {"status" | "role"} field the editor's field it sets
 * @property {[string, string][]} options value and text; the first is the default
 * @property {string} title its accessible name
 * @property {string} lead the words before it
 */

/** @type {Choice} */
const STATUS_CHOICE = {
  field: "status",
  options: [
    ["success", "as a success"],
    ["error", "as an error"],
  ],
  title: "Status of the result",
  lead: "The model reads it ",
};

/** @type {Partial<Record<Edit["kind"], Choice>>} */
const CHOICES = {
  skip: STATUS_CHOICE,
  result: STATUS_CHOICE,
  message: {
    field: "role",
    options: [
      ["user", "user"],
      ["assistant", "assistant"],
    ],
    title: "Who says it",
    lead: "From the ",
  },
};

/**
 * A labelled dropdown that shows and sets the edit's ``choice.field``.
 * @param {Edit} e
 * @param {Choice} choice
 * @returns {HTMLLabelElement}
 */
function choiceField(e, choice) {
  const sel = dropdown(choice.options, choice.title);
  sel.value = e[choice.field] || choice.options[0][0];
  sel.addEventListener("change", () => (e[choice.field] = sel.value));
  return h("label", "tl-lbl", choice.lead, sel);
}

const CHECKING = "Checking the arguments against the tool's schema…";
let shownEditors = 0; // numbers each editor's status line (its Run button is described by it)

const MAC = typeof navigator !== "undefined" && /Mac|iPhone|iPad/.test(navigator.platform || "");

/** What the editor says about its keys. */
export const EDITOR_KEYS = `${MAC ? "⌘" : "Ctrl"}+Enter applies · Esc cancels`;

/** What the editor says about Step and Continue. */
export const EDITOR_RELEASE = "Step and Continue apply it first";

/**
 * The change an open editor holds, as its own button sends it (`msg`); `error`: words
 * saying why it cannot be sent as it is; neither: it holds no change (as it opened).
 * `asIs`: its own button was pressed, so it goes as it is, changed or not.
 * @param {Edit} e
 * @param {boolean} [asIs]
 * @returns {{msg?: Record<string, any>, error?: string}}
 */
export function changeOf(e, asIs = false) {
  const from = e.from || { text: e.text };
  const same = !asIs && e.text === from.text && (e.status || "success") === (from.status || "success") && (e.role || "user") === (from.role || "user");
  /** @type {Record<string, any>} */
  const msg = { type: "intervene", pause: e.pause };
  if (e.kind === "args") {
    const parsed = parseArgs(e.text);
    if (parsed.error) return { error: parsed.error };
    const was = parseArgs(from.text);
    if (same || (!asIs && was.value && JSON.stringify(was.value) === JSON.stringify(parsed.value))) return {}; // laid out anew, not changed
    if (e.invalid) return { error: e.invalid };
    return { msg: Object.assign(msg, { action: "edit_args", call_id: e.callId, args: parsed.value }) };
  }
  if (same) return {};
  if (e.kind === "skip") return { msg: Object.assign(msg, { action: "skip", call_id: e.callId, content: e.text, status: e.status || "success" }) };
  if (e.kind === "result") return { msg: Object.assign(msg, { action: "edit_result", call_id: e.callId, content: e.text, status: e.status || "success" }) };
  if (!e.text.trim()) return { error: "Write the message first." };
  return { msg: Object.assign(msg, { action: "append_message", role: e.role || "user", content: e.text }) };
}

/**
 * The mark of the button that opens an editor (focus goes back to it when it closes).
 * @param {string} kind
 * @param {string} [callId]
 * @returns {string}
 */
export function opener(kind, callId) {
  return `${kind}:${callId || ""}`;
}

/**
 * @param {ViewContext} ctx
 */
export function createEditor(ctx) {
  const s = ctx.s;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let checkTimer;

  /** @param {Edit} edit */
  function open(edit) {
    s.ui.edit = { ...edit, from: { text: edit.text, status: edit.status, role: edit.role }, msg: "", msgKind: "idle", focus: true };
    ctx.redraw(true);
  }
  /** Close the open editor; when the focus was in it, it goes back to the button that opened it. */
  function close() {
    const was = s.ui.edit;
    const active = /** @type {HTMLElement | null} */ (document.activeElement);
    const box = active && typeof active.closest === "function" ? active.closest(".tl-editor") : null;
    const pane = box ? box.closest(".tl-detail-body") : null;
    s.ui.edit = null;
    ctx.redraw(true);
    if (!pane || !was) return;
    const mark = opener(was.kind, was.callId);
    ctx.drawn(() => {
      const btn = [...pane.querySelectorAll("[data-opens]")].find((b) => b instanceof HTMLElement && b.dataset.opens === mark);
      if (btn instanceof HTMLElement) btn.focus();
    });
  }

  /**
   * What shows `e`'s words (kept on it too: a view drawn later shows them).
   * @param {Edit} e
   * @returns {(state: string, text: string) => void}
   */
  const say = (e) =>
    e.show ||
    ((state, text) => {
      e.msgKind = state;
      e.msg = text;
    });

  /**
   * @param {Edit} e
   * @returns {HTMLElement}
   */
  function view(e) {
    const kind = EDITORS[e.kind];
    const box = h("div", "tl-editor");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", visible(kind.title(e)));
    box.append(h("div", "tl-sub", kind.title(e)));
    const area = h("textarea", "tl-textarea" + (e.kind === "args" ? " tl-code" : ""));
    area.value = e.text;
    area.spellcheck = false;
    area.rows = Math.min(12, Math.max(3, e.text.split("\n").length + 1));
    area.setAttribute("aria-label", kind.label);
    area.setAttribute("aria-keyshortcuts", "Control+Enter Meta+Enter Escape");
    const status = h("div", "tl-edit-msg");
    status.id = `tl-edit-msg-${++shownEditors}`;
    status.setAttribute("role", "status");
    status.setAttribute("aria-live", "polite");
    const apply = button(kind.apply, "tl-primary", () => submit(e, apply));
    apply.setAttribute("aria-describedby", status.id);
    e.show = (state, text) => {
      e.msgKind = state;
      e.msg = text;
      status.textContent = "";
      status.className = `tl-edit-msg tl-edit-${state}`;
      if (text) status.append(dot(state === "error" ? "error" : state === "ok" ? "answer" : "idle"), h("span", null, text));
      // arguments the live check refused cannot be sent: the reason is the line above
      apply.disabled = !!e.sending || !!e.invalid || !!e.checking; // sent: waiting for Python's answer
      apply.title = visible(e.invalid ? `Fix the arguments first: ${e.invalid}` : e.checking ? CHECKING : "");
    };
    e.show(e.msgKind || "idle", e.msg || "");
    area.addEventListener("input", () => {
      e.text = area.value;
      if (e.kind !== "args") return;
      // the last verdict was about other text: none is shown (nor sent) until the next
      e.invalid = "";
      e.checking = true;
      if (e.show) e.show("idle", CHECKING);
      checkSoon(e);
    });
    const extras = h("div", "tl-edit-row");
    const choice = CHOICES[e.kind];
    if (choice) extras.append(choiceField(e, choice));
    const cancel = button("Cancel", null, close, "Esc");
    extras.append(h("span", "tl-meta tl-edit-keys", EDITOR_KEYS), h("span", "tl-meta tl-edit-release", EDITOR_RELEASE), h("span", "tl-grow"), apply, cancel);
    box.append(area, status, extras);
    box.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") {
        ev.preventDefault();
        close();
      } else if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey) && !ev.shiftKey && !ev.altKey) {
        ev.preventDefault();
        if (!apply.disabled) submit(e, apply);
      }
    });
    if (e.focus) {
      e.focus = false;
      requestAnimationFrame(() => area.isConnected && area.focus());
    }
    return box;
  }

  /** @param {Edit} e */
  function checkSoon(e) {
    clearTimeout(checkTimer);
    checkTimer = setTimeout(() => {
      if (s.ui.edit !== e) return;
      const parsed = parseArgs(e.text);
      if (parsed.error) {
        e.invalid = parsed.error;
        e.checking = false;
        return say(e)("error", parsed.error);
      }
      const sent = e.text;
      ctx.ask({ type: "intervene", action: "check_args", pause: e.pause, call_id: e.callId, args: parsed.value }, (a) => {
        if (s.ui.edit !== e || e.text !== sent) return; // typed on since: a newer check follows
        e.invalid = a.ok ? "" : a.message || a.reason || "they do not fit the tool's schema";
        e.checking = false;
        say(e)(a.ok ? "ok" : "error", a.ok ? "These arguments fit the tool's schema." : a.message);
      });
    }, 300);
  }

  /**
   * @param {Edit} e
   * @param {HTMLButtonElement} btn
   */
  function submit(e, btn) {
    const made = changeOf(e, true);
    if (made.error) {
      if (e.kind === "args") e.invalid = made.error;
      return say(e)("error", made.error);
    }
    const msg = /** @type {Record<string, any>} */ (made.msg);
    clearTimeout(checkTimer);
    e.sending = true;
    btn.disabled = true;
    say(e)("idle", "Sending…");
    ctx.ask(msg, (a) => {
      e.sending = false;
      btn.disabled = false;
      const then = e.then;
      e.then = null;
      if (s.ui.edit !== e) return;
      if (a.ok) {
        close(); // the change comes back as an intervention event
        if (then) ctx.host.control(then); // clicked while it was being applied: now it is
        return;
      }
      if (a.reason === "invalid_args") e.invalid = a.message || a.reason;
      const held = then ? ` ${then === "step" ? "Step" : "Continue"} was not done.` : "";
      say(e)("error", `Refused (${a.reason}): ${a.message} — the run is unchanged and still paused.${held}`);
    });
  }

  /**
   * Step or Continue clicked (`action`): the change the open editor holds goes with the
   * click, made by Python before the loop goes on; a refusal holds the pause and says why
   * next to the edit. Returns false when no change goes (none open, or it holds none: it
   * closes), so the click is sent as it is.
   * @param {"step" | "continue"} action
   * @returns {boolean}
   */
  function release(action) {
    const e = s.ui.edit;
    const p = s.control.paused_at;
    if (!e || !p || e.pause !== p.pause) return false;
    const verb = action === "step" ? "Step" : "Continue";
    const going = `Applying your edit, then ${action === "step" ? "stepping" : "continuing"}…`;
    if (e.releasing) return true; // sent with a click already: its answer comes
    if (e.sending) {
      e.then = action; // its own button sent it: the click follows once it is made
      say(e)("idle", going);
      return true;
    }
    const made = changeOf(e);
    if (!made.error && !made.msg) {
      s.ui.edit = null; // nothing set up: nothing to apply
      ctx.redraw(true);
      return false;
    }
    clearTimeout(checkTimer);
    inView();
    if (made.error) {
      if (e.kind === "args") e.invalid = made.error;
      say(e)("error", `${verb} waits for your edit: ${made.error} Fix it or cancel it (Esc); the run is still paused.`);
      return true;
    }
    e.sending = e.releasing = true;
    say(e)("idle", going);
    ctx.ask({ type: "control", action, pause: p.pause, change: made.msg }, (a) => {
      e.sending = e.releasing = false;
      if (s.ui.edit !== e) return;
      if (a.ok) {
        s.ui.edit = null; // made: it comes back as an intervention event
        return ctx.redraw(true);
      }
      if (a.reason === "invalid_args") e.invalid = a.message || a.reason;
      inView();
      say(e)("error", `${verb} refused (${a.reason}): ${a.message || "no reason given"} — your edit was not applied; the run is unchanged and still paused. Fix it or cancel it (Esc), then ${verb} again.`);
    });
    return true;
  }

  /** Bring the open editor into view (it belongs to the newest round) when another round is shown. */
  function inView() {
    const last = s.run.rounds[s.run.rounds.length - 1];
    if (s.ui.selected === null || !last || s.ui.selected === last.n) return;
    s.ui.selected = null;
    s.ui.follow = true;
    ctx.redraw(true);
  }

  return { open, view, release };
}
