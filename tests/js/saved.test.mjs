// A debugger reopened from its notebook file with no kernel behind it (saved widget state):
// its figures are the run's, not the kept rounds', and nothing waits for a kernel.
import assert from "node:assert/strict";
import { mock, test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { loadCase, src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame"]) globalThis[name] = dom.window[name];
const { default: widget, SAVED_NOTE } = await import(src("debugger.js"));
const { ANSWER_WAIT_MS, NO_ANSWER } = await import(src("control_state.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks
const text = (el, selector) => el.querySelector(selector).textContent;

/** An anywidget model as a reopened notebook restores it: its state, and nobody listening. */
function savedModel(state) {
  const sent = [];
  return {
    sent,
    get: (name) => state[name],
    set() {},
    save_changes() {},
    send: (msg) => sent.push(msg),
    on() {},
    off() {},
  };
}

/** multi_round as a file that kept its newest rounds only: round 1 left out. */
function keptTail() {
  const events = loadCase("multi_round");
  const roundOne = events.filter((e) => e.round === 1);
  const messages = roundOne.filter((e) => e.kind === "model_call_start").reduce((n, e) => n + e.messages.length, 0);
  const kept = events.filter((e) => e.round !== 1);
  return { events, kept, messages };
}

async function reopened(state) {
  const model = savedModel({ live: true, _pause_on: "both", can_fork: true, ...state });
  const w = widget();
  w.initialize({ model });
  const el = document.createElement("div");
  document.body.append(el);
  const dispose = w.render({ model, el });
  await frame();
  return { el, model, dispose };
}

test("a saved run's header counts the rounds its file left out, and its calls what they were sent", async () => {
  const { events, kept, messages } = keptTail();
  assert.ok(messages > 0);
  const { el, dispose } = await reopened({ saved_events: kept, saved_omitted: 1, saved_omitted_messages: messages });
  assert.equal(text(el, ".tl-head .tl-meta"), "2 tool rounds, 3 model calls (at most 10 rounds)"); // the closing event's, though round 1 is not kept
  assert.equal(text(el, ".tl-badge"), "Finished");
  const end = events[events.length - 1];
  const totals = [...el.querySelectorAll(".tl-total-value")].map((n) => n.textContent);
  assert.equal(totals[0], `${end.usage.input_tokens} tokens`); // the closing event's totals
  const blocks = [...el.querySelectorAll(".tl-detail .tl-block-head, .tl-detail summary, .tl-detail button")].map((n) => n.textContent);
  const sentLabel = blocks.find((t) => t.startsWith("Sent to the model"));
  assert.ok(sentLabel, blocks.join(" | "));
  // round 3's call was sent round 1's message (left out), round 2's two and its own two
  const conversation = kept.filter((e) => e.kind === "model_call_start").reduce((n, e) => n + e.messages.length, 0);
  assert.match(sentLabel, new RegExp(`\\(${conversation + messages} messages, 2 new\\)`));
  assert.match(text(el, ".tl-note"), /1 earlier round are not shown/);
  // where the time went: across the run's 3 rounds, the left-out one's time named as such
  const said = text(el, ".tl-gantt-sum");
  assert.match(said, /across 3 rounds: 1 earlier round not in this file /);
  assert.doesNotMatch(said, /other/);
  assert.equal(text(el, ".tl-toolbar .tl-meta"), "2 of 3 rounds (the newest, kept in this file)");
  dispose();
});

test("without a kernel no control is drawn: no Continue, Step, Stop, pause selector nor fork", async () => {
  const { kept } = keptTail();
  const { el, model, dispose } = await reopened({ saved_events: kept, saved_omitted: 0 });
  assert.equal(el.querySelector(".tl-controls").hidden, true);
  const fork = [...el.querySelectorAll("button")].find((b) => /Fork from here/.test(b.textContent));
  assert.ok(!fork || fork.hidden, "no Fork button without a kernel");
  assert.equal(text(el, ".tl-note"), SAVED_NOTE);
  assert.deepEqual(model.sent, [{ type: "hello" }]); // it asked; nobody answered
  dispose();
});

test("a request nobody answers says so after a while, never waits forever", async () => {
  mock.timers.enable({ apis: ["setTimeout"] });
  try {
    const { numbered, createRequests } = await import(src("control_state.js"));
    const req = createRequests();
    const answers = [];
    const msg = numbered(req, { type: "fork" }, (a) => answers.push(a));
    mock.timers.tick(ANSWER_WAIT_MS - 1);
    assert.deepEqual(answers, []);
    mock.timers.tick(1);
    assert.deepEqual(answers, [{ request: msg.request, ok: false, reason: "no_answer", message: NO_ANSWER }]);
    assert.equal(req.pending.size, 0);
  } finally {
    mock.timers.reset();
  }
});

test("a call whose source records its prompt only at its end says it is not known, never 0 messages", async () => {
  const { mount } = await import(src("debugger.js"));
  const events = loadCase("multi_round");
  const first = events.findIndex((e) => e.kind === "model_call_start");
  const upTo = events.slice(0, first + 1).map((e) => (e.kind === "model_call_start" ? { ...e, messages: [] } : e));
  const el = document.createElement("div");
  document.body.append(el);
  const { dispose } = mount(el, upTo);
  await frame();
  const detail = text(el, ".tl-detail");
  assert.match(detail, /What the model was sent is not known: its source records it when the call ends\./);
  assert.doesNotMatch(detail, /0 messages/);
  dispose();
});
