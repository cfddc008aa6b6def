// The live controls (jsdom, the anywidget lifecycle on a stand-in model): a control that
// cannot act on the run shown (Python's control.reach) is disabled, says why in its
// tooltip, and a short hint beside the controls says it too. And a LangGraph run that an
// interrupt() paused reads as interrupted, waiting for input, never as a failure.
import assert from "node:assert/strict";
import { test } from "node:test";
import { settled } from "./fixtures.mjs";
import { JSDOM } from "jsdom";
import { loadCase, src } from "./fixtures.mjs";

const dom = new JSDOM("<!doctype html><html><body></body></html>", { pretendToBeVisual: true });
for (const name of ["document", "requestAnimationFrame", "cancelAnimationFrame"]) globalThis[name] = dom.window[name];
const { default: factory, mount } = await import(src("debugger.js"));

const frame = (ms = 60) => settled(ms); // a draw starts on the next frame and may go on in later tasks

/** A stand-in anywidget model: traits, what the page sent, and Python's messages. */
function standIn() {
  const traits = { live: true, _pause_on: "tools", saved_events: [], can_fork: false, round_offset: 0, fork_info: {} };
  const handlers = new Map();
  const sent = [];
  return {
    sent,
    get: (name) => traits[name],
    set: (name, value) => (traits[name] = value),
    save_changes() {},
    send: (msg) => sent.push(msg),
    on: (event, fn) => handlers.set(event, fn),
    off: (event) => handlers.delete(event),
    fromPython: (msg) => handlers.get("msg:custom")(msg),
  };
}

async function live(events, control) {
  const model = standIn();
  const widget = factory();
  const el = document.createElement("div");
  document.body.append(el);
  const stop = widget.initialize({ model });
  const dispose = widget.render({ model, el });
  model.fromPython({ type: "events", epoch: 1, first: 0, reset: true, events, now: 1, control });
  await frame();
  return { el, model, close: () => (dispose(), stop()) };
}

const running = (reach) => ({ paused_at: null, running: true, note: null, stopped_by_user: false, reach, answer: null });
const startOf = (source) => [{ kind: "loop_start", run_id: "r1", round: 0, t: 0, model_name: "m", tools: ["add"], max_rounds: null, token_budget: null, context_window: null, usd_limit: null, prune_tools: [], input_messages: 1, started_at: "2026-01-01T00:00:00+00:00", source }];

test("controls that cannot act are disabled, and say why in a tooltip and a hint", async () => {
  const why = "The debugger observes this LangChain or LangGraph run but does not drive it.";
  const { el, close } = await live(startOf("langchain"), running({ stop: false, pause: false, why, code: "bridged", hint: "Observed run" }));
  const [cont, step, stop] = [...el.querySelectorAll(".tl-controls .tl-btn")];
  assert.deepEqual([cont.textContent, step.textContent, stop.textContent], ["Continue", "Step", "Stop"]);
  for (const b of [cont, step, stop]) {
    assert.equal(b.disabled, true);
    assert.equal(b.title, why);
  }
  const select = el.querySelector(".tl-controls select");
  assert.equal(select.disabled, true);
  assert.equal(select.closest("label").title, why);
  const hint = el.querySelector(".tl-reach-hint");
  assert.equal(hint.hidden, false);
  assert.equal(hint.textContent, "Observed run");
  assert.equal(hint.title, why);
  close();
});

test("a run the controls reach keeps them enabled, with their own tooltips", async () => {
  const { el, model, close } = await live(startOf("loop"), running({ stop: true, pause: true, why: null }));
  const stop = [...el.querySelectorAll(".tl-controls .tl-btn")].find((b) => b.textContent === "Stop");
  assert.equal(stop.disabled, false);
  assert.match(stop.title, /partial counts stay/);
  assert.equal(el.querySelector(".tl-controls select").disabled, false);
  assert.equal(el.querySelector(".tl-reach-hint").hidden, true);
  stop.click();
  assert.deepEqual(model.sent.at(-1), { type: "control", action: "stop", pause: null });
  close();
});

test("Stop may act where pausing cannot (a debugger not among the agent's observers)", async () => {
  const why = "Pausing needs the debugger among the agent's observers.";
  const { el, close } = await live(startOf("loop"), running({ stop: true, pause: false, why, code: "not_connected", hint: "No pausing" }));
  const buttons = Object.fromEntries([...el.querySelectorAll(".tl-controls .tl-btn")].map((b) => [b.textContent, b]));
  assert.equal(buttons.Stop.disabled, false);
  assert.equal(buttons.Step.title, why);
  assert.equal(el.querySelector(".tl-controls select").disabled, true);
  close();
});

test("an interrupted LangGraph run reads as waiting for input, not as a failure", async () => {
  const el = document.createElement("div");
  document.body.append(el);
  const { dispose } = mount(el, loadCase("langgraph_interrupted"));
  await frame();
  assert.equal(el.querySelector(".tl-badge").textContent, "Interrupted");
  assert.match(el.querySelector(".tl-badge").className, /tl-b-warn/);
  assert.equal(el.querySelector(".tl-activity .tl-strong").textContent, "Interrupted, waiting for input: ");
  assert.equal(el.querySelector(".tl-failure").hidden, true);
  assert.ok(el.textContent.includes("paused by interrupt(), waiting for input"));
  assert.ok(!/failed/i.test(el.querySelector(".tl-head").textContent));
  dispose();
});
